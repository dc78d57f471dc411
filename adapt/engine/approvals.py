"""A person in the loop: the points where a task asks for approval, and the decisions.

A task asks for approval with ``RunConfig.approval`` (``{"plans": true, "actions": [...]}``).
When the planner returns a plan (and, later, when the executor proposes a named action), the
engine marks the node ``awaiting_approval`` and asks the run's gate (``ApprovalGate``, given to
``run_task(approvals=...)``) for the decision on that point. A point is named by an
:class:`ApprovalRequest` key, ``(node id, kind, number)``, which a replay of the same run meets
again in the same order, so a decision stored once is found by every later attempt.

No decision yet: the engine stores what it did so far and raises ``AwaitingApproval``; the
caller (the service) records the request, lets the task wait without a worker, and runs it
again once decided (the replay pays no LLM call again). With ``parallel_siblings`` the later
AND siblings of a node that waits start too, and the run stops with every request that waits
(:mod:`adapt.engine.siblings`). A decision:

- ``approve``: the proposal runs as it is;
- ``edit``: the changed proposal runs instead (validated as the planner's plan would be:
  :mod:`adapt.engine.proposals`);
- ``reject``: the proposal is dropped and the reason goes back to the model that made it (the
  planner plans again, the executor's observation is the rejection).

This module holds the data only (the run's runtime imports it); what a proposal looks like
and how an edit is validated is :mod:`adapt.engine.proposals`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

ApprovalKind = Literal["plan", "action"]
DecisionKind = Literal["approve", "reject", "edit"]
TimeoutOutcome = Literal["reject", "fail"]
ActionName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class ApprovalConfig(BaseModel):
    """Where a task asks a person (``approval`` of a task)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plans: bool = Field(
        default=False,
        description="Ask before running each plan the planner returns: the node waits "
        "(awaiting_approval) and the task too (waiting) until approved, edited or rejected "
        "(POST /tasks/{id}/approvals/{approval_id}).")
    actions: list[ActionName] = Field(
        default_factory=list, max_length=64,
        description="Action or tool names to ask about before the executor runs them, or "
        "'destructive' for tools that declare themselves so.")
    timeout_seconds: float | None = Field(
        default=None, gt=0, le=30 * 24 * 3600,
        description="How long a request may wait for a decision (null: as long as it takes); "
        "then on_timeout decides.")
    on_timeout: TimeoutOutcome = Field(
        default="reject",
        description="What a request nobody answered before timeout_seconds becomes: 'reject' "
        "(the model hears that nobody approved in time, and proposes again) or 'fail' (the "
        "task ends failed).")

    parallel_siblings: bool = Field(
        default=False,
        description="While a node waits for a decision, its later AND siblings start too "
        "(each runs until it ends or waits for a decision of its own), so one task can wait "
        "on several approvals at once, answered in any order. For environments whose "
        "sub-tasks do not depend on each other's progress; strategies that plan only.")

    @property
    def any(self) -> bool:
        return self.plans or bool(self.actions)


class ApprovalRequest(BaseModel):
    """One point that waits for a decision; ``(node_id, kind, number)`` names it in a run."""

    model_config = ConfigDict(frozen=True)

    node_id: int
    kind: ApprovalKind
    #: the how-manieth request of this kind on the node (1, 2, ... after rejections)
    number: int = Field(ge=1)
    #: what is proposed (``adapt.engine.proposals``)
    proposal: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.node_id}:{self.kind}:{self.number}"


class Decision(BaseModel):
    """A person's decision on one request."""

    model_config = ConfigDict(frozen=True)

    decision: DecisionKind
    reason: str | None = None
    #: the changed proposal of an ``edit``
    proposal: dict[str, Any] | None = None
    #: the decision's place among the task's decisions, in the order they were made (the
    #: service numbers them as it stores them); with ``approval.parallel_siblings`` the parked
    #: requests go on in this order (None: in the order they were asked)
    order: int | None = None


#: how the engine learns the decision on a request (None: none yet)
ApprovalGate = Callable[[ApprovalRequest], Awaitable[Decision | None]]


__all__ = [
    "ApprovalConfig", "ApprovalGate", "ApprovalKind", "ApprovalRequest", "Decision",
    "DecisionKind", "TimeoutOutcome",
]
