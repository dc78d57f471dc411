"""The approvals family: ``ApprovalDecision`` (the request), ``ApprovalPublic`` /
``ApprovalList`` (what ``/tasks/{id}/approvals`` returns)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from adapt.engine.approvals import ApprovalKind, DecisionKind
from api.schemas.common import FROM_ROWS, STRICT


class ApprovalDecision(BaseModel):
    """A person's decision on one approval request."""

    model_config = STRICT

    decision: DecisionKind = Field(description="approve: run the proposal as it is; reject: "
                                   "drop it, the planner (or executor) hears `reason` and "
                                   "proposes again; edit: run `proposal` instead.")
    reason: str | None = Field(default=None, min_length=1, max_length=4000,
                               description="Why (a rejection's reason is what the model "
                               "hears).")
    proposal: dict[str, Any] | None = Field(
        default=None, description="An edit's changed proposal, validated like the original: "
        'a plan is {"steps": [...], "execution_order": "(Step 1 AND Step 2)"}; an action '
        '{"action": "<one line>"}; a tool call {"name": "<the same tool>", "arguments": '
        "{...}} (checked against the tool's input schema, the proposal's `schema`).",
        examples=[{"steps": ["fetch 2 stick", "craft 1 wooden pickaxe"],
                   "execution_order": "(Step 1 AND Step 2)"}])


class ApprovalPublic(BaseModel):
    model_config = FROM_ROWS

    id: str
    task_id: str
    node_id: int
    kind: ApprovalKind
    number: int = Field(description="The how-manieth request of this kind at the node (a "
                        "rejected plan is proposed again: 2, 3, ...).")
    proposal: dict[str, Any] = Field(description="What waits: a plan's steps and execution "
                                     "order, or an action (`action`, `name`; a tool call's "
                                     "`arguments` and the tool's input `schema`).")
    status: Literal["pending", "approved", "rejected", "edited", "expired", "withdrawn"] = Field(
        description="expired: nobody decided before the deadline and the task failed "
        "(approval.on_timeout: fail); withdrawn: the task ended (cancelled, failed at another "
        "request's deadline) before anyone decided, `changes.task` says how.")
    reason: str | None
    edited: dict[str, Any] | None = Field(description="An edit's proposal, as it ran.")
    changes: dict[str, Any] | None = Field(description="What the decision changed: each "
                                           "edited field's before and after, or a "
                                           "rejection's reason.")
    decided_by: str | None = Field(description="The id of the API key that decided (null: "
                                   "the API ran open).")
    decided_tenant: str | None
    requested_at: datetime
    decided_at: datetime | None
    decided_seq: int | None = Field(
        default=None, description="The decision's number among the task's decisions (1, 2, "
        "...), in the order they were stored; sibling nodes that wait at the same time "
        "(approval.parallel_siblings) go on in this order. null: not decided.")


class ApprovalList(BaseModel):
    items: list[ApprovalPublic]
