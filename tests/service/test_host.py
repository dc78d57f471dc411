"""The worker host, the one lifecycle under the embedded and Celery drivers: one slot per task
in the process (a duplicate there returns at once), and a shutdown that drains, hands the
leases back and, when the queue outlives the process, dispatches the tasks again. Real SQLite
and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import update

from adapt.service.context import ServiceContext
from adapt.service.execute import execute_task
from adapt.service.host import WorkerHost
from adapt.settings import Settings
from adapt.sim import from_spec
from adapt.store.models import Task, utcnow
from tests.service.helpers import insert_task, task_row
from tests.service.test_execute import SIM, Counting, make_ctx


def host_settings(url: str) -> Settings:
    return Settings.model_validate({"ADAPT_DATABASE_URL": url, "lease_seconds": 30,
                                    "heartbeat_seconds": 0.05, "sweep_seconds": 60,
                                    "drain_seconds": 0.2})


def start(host: WorkerHost, model: Counting) -> ServiceContext:
    ctx = host.start()
    ctx.load_model = lambda spec: model  # type: ignore[method-assign]
    return ctx


async def expire_lease(ctx: ServiceContext, task_id: str) -> None:
    async with ctx.sessions.begin() as s:
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))


async def test_a_second_run_in_the_same_process_returns_at_once(database_url: str) -> None:
    """Even after the running attempt's lease expired (a late heartbeat), a duplicate delivery
    to the process that runs the task starts no second attempt beside the first."""
    slow = Counting(from_spec(SIM), hang_after=2)
    ctx = make_ctx(database_url, "w1", slow, heartbeat_seconds=30)
    task_id = await insert_task(ctx.sessions)
    first = asyncio.create_task(execute_task(ctx, task_id))
    await asyncio.wait_for(slow.hung.wait(), 10)
    await expire_lease(ctx, task_id)
    assert await asyncio.wait_for(execute_task(ctx, task_id), 5) is None
    assert (await task_row(ctx.sessions, task_id)).attempt == 1
    assert list(ctx.running) == [task_id] and ctx.running[task_id].task is first
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert ctx.running == {}
    await ctx.aclose()


async def test_a_stop_hands_the_tasks_back_to_a_durable_queue(database_url: str) -> None:
    sent: list[str] = []

    async def dispatch(task_id: str) -> None:
        sent.append(task_id)

    host = WorkerHost(host_settings(database_url), dispatch=dispatch)
    slow = Counting(from_spec(SIM), hang_after=2)
    ctx = start(host, slow)
    task_id = await insert_task(ctx.sessions)
    run = asyncio.create_task(host.run(task_id))
    await asyncio.wait_for(slow.hung.wait(), 10)
    assert host.running == [task_id]

    assert await host.stop() == [task_id]
    assert run.cancelled() and host.running == [] and sent == [task_id]
    row = await task_row(ctx.sessions, task_id)
    assert row.status == "running" and row.attempt == 1 and row.lease_owner is None
    assert await host.run(task_id) is None, "a task arriving during a shutdown is not run"
    assert sent == [task_id, task_id], "... but sent back to the queue"
    assert await host.stop() == []
    await host.aclose()
    other = make_ctx(database_url, "w2")
    assert await asyncio.wait_for(execute_task(other, task_id), 30) == "succeeded"
    assert (await task_row(other.sessions, task_id)).attempt == 2
    await other.aclose()


async def test_an_in_process_queue_is_not_handed_anything(database_url: str) -> None:
    """The embedded runner's queue is the process: a stop releases the leases (the next start
    resumes the tasks) and dispatches nothing, and spawned tasks run at most ``concurrency``
    at once."""
    sent: list[str] = []

    async def dispatch(task_id: str) -> None:
        sent.append(task_id)

    host = WorkerHost(host_settings(database_url), dispatch=dispatch, durable_queue=False,
                      concurrency=1)
    slow = Counting(from_spec(SIM), hang_after=2)
    ctx = start(host, slow)
    ids = [await insert_task(ctx.sessions, config={"seed": s}) for s in (5, 7)]
    for task_id in ids:
        host.spawn(task_id)
        host.spawn(task_id)  # nothing: it is waiting or running here already
    await asyncio.wait_for(slow.hung.wait(), 10)
    assert host.running == ids
    assert (await task_row(ctx.sessions, ids[1])).status == "queued", "over the concurrency"

    swept = list(sent)  # (the first sweep dispatches what is queued, here to ``sent``)
    assert await host.stop() == [ids[0]]
    assert sent == swept and host.running == []
    assert (await task_row(ctx.sessions, ids[0])).lease_owner is None
    assert (await task_row(ctx.sessions, ids[1])).status == "queued"
    await host.aclose()
