"""Fewer paid calls lost to interruptions: a shutdown drains the calls in flight (they are
answered and recorded, nothing is paid twice on resume), and a cancel requested while no worker
ran the task is seen before the resumed attempt's first live call. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update

from adapt.engine import RunConfig
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.service.execute import drain, execute_task
from adapt.service.sweeper import release_leases
from adapt.sim import from_spec
from adapt.store.models import Task, utcnow
from tests.service.helpers import events, insert_task, persisted_tree, task_row
from tests.service.test_execute import SIM, Counting, as_persisted, make_ctx, reference_tree
from tests.support.workers import llm_call_count


class Slow(Counting):
    """Counts calls; each call takes ``delay`` seconds; ``started`` is set when call
    ``signal_at`` begins."""

    def __init__(self, delay: float, signal_at: int) -> None:
        super().__init__(from_spec(SIM))
        self.delay, self.signal_at = delay, signal_at
        self.started = asyncio.Event()
        self.begun = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.begun += 1
        if self.begun == self.signal_at:
            self.started.set()
        await asyncio.sleep(self.delay)
        return await super().complete(request)


async def test_shutdown_drains_the_call_in_flight_and_resume_pays_nothing_twice(
    database_url: str,
) -> None:
    first = Slow(delay=0.3, signal_at=5)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11})
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.started.wait(), 30)  # call 5 is in flight
    await drain(ctx1, [run1], timeout=10)
    assert run1.result() is None  # stopped, not finished
    assert first.calls == first.begun == 5, "the call in flight was answered, none started"
    assert await llm_call_count(ctx1.sessions, task_id) == 5, "and it was recorded"
    assert await release_leases(ctx1.sessions, "w1", [task_id]) == [task_id]
    await ctx1.aclose()

    second = Counting(from_spec(SIM))
    ctx2 = make_ctx(database_url, "w2", second)
    try:
        assert await execute_task(ctx2, task_id) == "succeeded"
        assert second.calls == 15 - 5, "a call answered before the shutdown was paid again"
        expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
        assert await persisted_tree(ctx2.sessions, task_id) == expected
    finally:
        await ctx2.aclose()


async def test_cancel_while_the_worker_is_dead_pays_no_further_call(database_url: str) -> None:
    first = Counting(from_spec(SIM), hang_after=9)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11})
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 30)
    run1.cancel()  # the worker dies mid-task; its lease stays
    with pytest.raises(asyncio.CancelledError):
        await run1
    await ctx1.aclose()
    async with ctx1.sessions.begin() as s:  # cancelled meanwhile; then the lease expires
        await s.execute(update(Task).where(Task.id == task_id).values(
            cancel_requested=True, lease_expires_at=utcnow() - timedelta(seconds=1)))

    second = Counting(from_spec(SIM))
    ctx2 = make_ctx(database_url, "w2", second)
    try:
        assert await execute_task(ctx2, task_id) == "cancelled"
        assert second.calls == 0, "the resumed attempt paid for a call after the cancel"
        task = await task_row(ctx2.sessions, task_id)
        assert task.llm_calls == 9 and task.attempt == 2
        evs = await events(ctx2.sessions, task_id)
        assert [e.seq for e in evs] == list(range(1, task.last_seq + 1))
        assert [e.ordinal for e in evs] == list(range(1, len(evs) + 1))
        assert evs[-1].type == "task.finished" and evs[-1].data["status"] == "cancelled"
    finally:
        await ctx2.aclose()


async def test_close_waits_for_the_lease_renewal_under_way(
    database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A renewal of the heartbeat under way when the context closes lands before the close
    returns, never after (a late renewal would extend a lease the test, or another worker,
    has just expired, and the task would wait a whole lease before anyone resumed it)."""
    from adapt.store import task_rows

    renewing, renewed = asyncio.Event(), asyncio.Event()
    real = task_rows.renew_leases

    async def slow_renew(*args: object, **kwargs: object) -> dict[str, int]:
        renewing.set()
        await asyncio.sleep(0.3)
        result = await real(*args, **kwargs)  # type: ignore[arg-type]
        renewed.set()
        return result

    monkeypatch.setattr(task_rows, "renew_leases", slow_renew)
    first = Counting(from_spec(SIM), hang_after=3)
    ctx = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    run = asyncio.create_task(execute_task(ctx, task_id))
    await asyncio.wait_for(renewing.wait(), 30)  # a beat is renewing the task's lease
    run.cancel()  # the worker stops its task, then closes
    await asyncio.gather(run, return_exceptions=True)
    await ctx.aclose()
    assert renewed.is_set(), "the context closed with a lease renewal still under way"
