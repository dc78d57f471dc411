"""Requests nobody can decide any more are closed ``withdrawn``: nothing stays ``pending`` on
a finished task (the list, the viewer, the deadline sweep), and a resumed task that asks the
same question again reopens its request. Real SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select, update

from adapt.engine import RunConfig
from adapt.engine.approvals import ApprovalRequest
from adapt.service.execute import ServiceContext
from adapt.service.sweeper import sweep_once
from adapt.store import approvals as approval_store
from adapt.store.models import ApprovalRow, Task
from tests.service.helpers import insert_task
from tests.service.test_approvals import overdue_now, pending, run_until_waiting
from tests.service.test_execute import make_ctx

DEADLINE = RunConfig(d_max=2, approval={"plans": True, "timeout_seconds": 60})


async def waiting_task(database_url: str) -> tuple[ServiceContext, str, ApprovalRow]:
    """A task that waits for its one plan approval (due in 60 s), and that request."""
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, run_config=DEADLINE)
    await run_until_waiting(database_url, task_id, "w1")
    (row,) = await pending(ctx, task_id)
    return ctx, task_id, row


async def test_the_sweep_withdraws_a_finished_tasks_overdue_request(database_url: str) -> None:
    ctx, task_id, row = await waiting_task(database_url)
    # a task that ended with a request still pending (stored before requests were closed at
    # a task's end, or an end that did not close them): its deadline passes
    async with ctx.sessions.begin() as s:
        await s.execute(update(Task).where(Task.id == task_id).values(status="failed"))
    await overdue_now(ctx, task_id)

    async def dispatch(task_id: str) -> None:
        raise AssertionError("a finished task is not dispatched")

    await sweep_once(ctx.sessions, dispatch, grace=60)
    async with ctx.sessions() as s:
        closed = await s.get(ApprovalRow, row.id)
    assert closed is not None and closed.status == "withdrawn"
    assert closed.changes == {"task": "failed"} and closed.deadline_at is None
    # and the next sweep does not meet it again
    assert await approval_store.overdue(ctx.sessions, closed.decided_at or row.requested_at) == []


async def test_a_withdrawn_request_asked_again_is_pending_again(database_url: str) -> None:
    ctx, task_id, row = await waiting_task(database_url)
    async with ctx.sessions.begin() as s:
        assert await approval_store.withdraw(s, task_id, "error") == 1
        assert await approval_store.withdraw(s, task_id, "error") == 0  # none left
    request = ApprovalRequest(node_id=row.node_id, kind="plan", number=row.number,
                              proposal=row.proposal)
    async with ctx.sessions.begin() as s:
        again, new = await approval_store.add_request(s, task_id, request, deadline_seconds=60)
    assert new and again.id == row.id
    async with ctx.sessions() as s:
        rows = (await s.execute(select(ApprovalRow).where(
            ApprovalRow.task_id == task_id))).scalars().all()
    assert [(r.id, r.status, r.changes) for r in rows] == [(row.id, "pending", None)]
    assert rows[0].deadline_at is not None and rows[0].decided_at is None
