"""Every write and read on the ``approvals`` table (a person in the loop, issue 30).

A row is made when a run stops at an approval point with no decision (the worker's wait,
:func:`adapt.service.approvals.wait`), and decided once (:func:`decide`, conditional on
``status = 'pending'``, so two people deciding at once cannot both win). Later attempts of the
task read the decisions (:func:`decisions`) and find them where the replay asks again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.approvals import ApprovalRequest, Decision, DecisionKind
from adapt.store.models import ApprovalRow, utcnow

#: the row's status after each decision
DECIDED: dict[str, str] = {"approve": "approved", "reject": "rejected", "edit": "edited"}
#: the decision a decided row holds
DECISION_OF: dict[str, DecisionKind] = {"approved": "approve", "rejected": "reject",
                                        "edited": "edit"}


def key_of(row: ApprovalRow) -> str:
    return f"{row.node_id}:{row.kind}:{row.number}"


async def find(session: AsyncSession, task_id: str, request: ApprovalRequest
               ) -> ApprovalRow | None:
    return (await session.execute(select(ApprovalRow).where(
        ApprovalRow.task_id == task_id, ApprovalRow.node_id == request.node_id,
        ApprovalRow.kind == request.kind, ApprovalRow.number == request.number))
    ).scalar_one_or_none()


async def add_request(session: AsyncSession, task_id: str, request: ApprovalRequest, *,
                      deadline_seconds: float | None = None) -> tuple[ApprovalRow, bool]:
    """The row of ``request``: the one stored already, or a new pending one (in the caller's
    transaction), due by ``deadline_seconds`` from now if given; and whether it is new."""
    row = await find(session, task_id, request)
    now = utcnow()
    if row is not None and row.status == "withdrawn":  # a resumed task asks again: reopen
        row.status, row.decided_at, row.changes, row.requested_at = "pending", None, None, now
        row.deadline_at = (None if deadline_seconds is None
                           else now + timedelta(seconds=deadline_seconds))
        await session.flush()
        return row, True
    if row is not None:
        return row, False
    row = ApprovalRow(id=uuid.uuid4().hex, task_id=task_id, node_id=request.node_id,
                      kind=request.kind, number=request.number, proposal=request.proposal,
                      status="pending", requested_at=now,
                      deadline_at=None if deadline_seconds is None
                      else now + timedelta(seconds=deadline_seconds))
    session.add(row)
    await session.flush()
    return row, True


async def decisions(sessions: async_sessionmaker[AsyncSession], task_id: str
                    ) -> dict[str, Decision]:
    """The decided requests of ``task_id`` by key (``node:kind:number``)."""
    async with sessions() as session:
        rows = (await session.execute(select(ApprovalRow).where(
            ApprovalRow.task_id == task_id, ApprovalRow.status != "pending"))).scalars().all()
    return {key_of(r): decision_of(r) for r in rows if r.status in DECISION_OF}


def decision_of(row: ApprovalRow) -> Decision:
    return Decision(decision=DECISION_OF[row.status], reason=row.reason, proposal=row.edited,
                    order=row.decided_seq)


async def next_decision_number(session: AsyncSession, task_id: str) -> int:
    """The number of the task's next decision. Call it once the transaction holds the task
    row's lock (it appended an event): decisions are then numbered in the order they commit."""
    last = (await session.execute(select(func.max(ApprovalRow.decided_seq)).where(
        ApprovalRow.task_id == task_id))).scalar_one_or_none()
    return int(last or 0) + 1


async def for_task(session: AsyncSession, task_id: str, *, status: str | None = None
                   ) -> Sequence[ApprovalRow]:
    """``task_id``'s requests, oldest first (``status``: only those)."""
    stmt = select(ApprovalRow).where(ApprovalRow.task_id == task_id)
    if status is not None:
        stmt = stmt.where(ApprovalRow.status == status)
    stmt = stmt.order_by(ApprovalRow.requested_at, ApprovalRow.node_id, ApprovalRow.number)
    return (await session.execute(stmt.execution_options(populate_existing=True))
            ).scalars().all()


async def get(session: AsyncSession, task_id: str, approval_id: str) -> ApprovalRow | None:
    return (await session.execute(select(ApprovalRow).where(
        ApprovalRow.task_id == task_id, ApprovalRow.id == approval_id)
        .execution_options(populate_existing=True))).scalar_one_or_none()


async def pending_count(session: AsyncSession, task_id: str) -> int:
    return int((await session.execute(select(func.count()).select_from(ApprovalRow).where(
        ApprovalRow.task_id == task_id, ApprovalRow.status == "pending"))).scalar_one())


async def overdue(sessions: async_sessionmaker[AsyncSession], now: datetime, limit: int = 100
                  ) -> list[tuple[str, str]]:
    """(task id, approval id) of pending requests whose deadline passed, oldest first (a
    finished task's are withdrawn by the caller, so they are not returned again)."""
    async with sessions() as session:
        rows = (await session.execute(
            select(ApprovalRow.task_id, ApprovalRow.id)
            .where(ApprovalRow.status == "pending", ApprovalRow.deadline_at < now)
            .order_by(ApprovalRow.deadline_at).limit(limit))).all()
    return [(str(r[0]), str(r[1])) for r in rows]


async def expire(session: AsyncSession, approval_id: str, at: datetime) -> bool:
    """Mark a pending request ``expired`` (its task failed at the deadline); False when it
    was decided meanwhile."""
    result = await session.execute(
        update(ApprovalRow)
        .where(ApprovalRow.id == approval_id, ApprovalRow.status == "pending")
        .values(status="expired", decided_at=at, changes={"deadline": "passed"})
        .returning(ApprovalRow.id)
        .execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None


async def withdraw(session: AsyncSession, task_id: str, task_status: str,
                   at: datetime | None = None) -> int:
    """Close the task's pending requests ``withdrawn`` (the task ended before anyone decided:
    cancelled, failed at another request's deadline, ended with an error), in the caller's
    transaction; returns how many. Nothing is left pending on a finished task, for the list,
    the viewer and the deadline sweep."""
    result = await session.execute(
        update(ApprovalRow)
        .where(ApprovalRow.task_id == task_id, ApprovalRow.status == "pending")
        .values(status="withdrawn", decided_at=at or utcnow(), deadline_at=None,
                changes={"task": task_status})
        .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)


async def decide(session: AsyncSession, approval_id: str, decision: DecisionKind, *,
                 reason: str | None, edited: dict[str, Any] | None,
                 changes: dict[str, Any] | None, decided_by: str | None, tenant: str,
                 at: datetime | None = None, number: int | None = None) -> bool:
    """Record the decision on a pending request, in the caller's transaction (``number``: its
    place among the task's decisions, :func:`next_decision_number`); False when it is no
    longer pending (decided concurrently)."""
    result = await session.execute(
        update(ApprovalRow)
        .where(ApprovalRow.id == approval_id, ApprovalRow.status == "pending")
        .values(status=DECIDED[decision], reason=reason, edited=edited, changes=changes,
                decided_by=decided_by, decided_tenant=tenant, decided_at=at or utcnow(),
                decided_seq=number)
        .returning(ApprovalRow.id)
        .execution_options(synchronize_session=False))
    return result.scalar_one_or_none() is not None
