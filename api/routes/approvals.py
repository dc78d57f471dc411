"""``/tasks/{id}/approvals``: what a task waits for, and a person's decisions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.deps import TaskServiceDep
from api.schemas import Problem
from api.schemas.approvals import ApprovalDecision, ApprovalList, ApprovalPublic

router = APIRouter(prefix="/tasks", tags=["approvals"])

PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or invalid API key"},
    404: {"model": Problem, "description": "Unknown task or approval (or another tenant's)"},
    422: {"model": Problem, "description": "Invalid request; `errors` names each bad field"},
}


@router.get(
    "/{task_id}/approvals",
    response_model=ApprovalList,
    summary="A task's approval requests, oldest first",
    description="Every point where the task asked a person (`approval` of the task), pending "
    "or decided, with the decision's audit (who: the API key's id and tenant; when; what "
    "changed). `?status=pending` lists what waits.",
    responses=PROBLEMS,
)
async def list_approvals(
    task_id: str, service: TaskServiceDep,
    status: Annotated[Literal["pending", "approved", "rejected", "edited", "expired",
                                "withdrawn"] | None,
                      Query(description="Only requests in this status.")] = None,
) -> ApprovalList:
    rows = await service.approvals(task_id, status=status)
    return ApprovalList(items=[ApprovalPublic.model_validate(r) for r in rows])


@router.post(
    "/{task_id}/approvals/{approval_id}",
    response_model=ApprovalPublic,
    summary="Approve, reject or edit what a task waits for",
    description="Records the decision (with the caller's API key id and tenant) and, once "
    "nothing else of the task waits, queues the task again: its next attempt replays the "
    "recorded LLM calls (none is paid again) and goes on from the decision. **409** when the "
    "request was decided already or the task finished; **422** for an edit whose proposal "
    "does not validate (`errors` names the field, e.g. `proposal.execution_order`).",
    responses={**PROBLEMS, 409: {"model": Problem,
                                 "description": "Decided already, or the task finished"}},
)
async def decide(task_id: str, approval_id: str, body: ApprovalDecision,
                 service: TaskServiceDep) -> ApprovalPublic:
    row = await service.decide(task_id, approval_id, body.decision, reason=body.reason,
                               proposal=body.proposal)
    return ApprovalPublic.model_validate(row)
