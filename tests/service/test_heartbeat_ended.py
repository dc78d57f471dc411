"""The heartbeat and an attempt that has just ended its task: the renewal no longer finds the
task (it renews running tasks only), yet nobody took it over; the heartbeat leaves the attempt
to return its result instead of stopping it as if its lease were lost (it used to, when a beat
fell between the task's final write and the attempt's return). A task another worker took over
is still stopped. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from sqlalchemy import update

from adapt.service.context import Running, _beat
from adapt.store import task_rows
from adapt.store.models import Task
from tests.service.helpers import insert_task
from tests.service.test_execute import make_ctx


async def test_an_attempt_that_ended_its_task_is_not_stopped(database_url: str) -> None:
    ctx = make_ctx(database_url, "w1")
    try:
        ended, taken = (await insert_task(ctx.sessions, config={"seed": 11}),
                        await insert_task(ctx.sessions, config={"seed": 12}))
        for task_id in (ended, taken):
            assert await task_rows.claim(ctx.sessions, task_id, "w1", 30) == 1
        async with ctx.sessions.begin() as s:  # one attempt's final write; one task taken over
            await s.execute(update(Task).where(Task.id == ended).values(  # as the sink writes it
                status="succeeded", lease_owner=None, lease_expires_at=None))
            await s.execute(update(Task).where(Task.id == taken).values(lease_owner="w2",
                                                                        worker="w2"))
        finishing = {t: asyncio.create_task(asyncio.sleep(30)) for t in (ended, taken)}
        for task_id, runner in finishing.items():
            ctx.running[task_id] = Running(task=runner, attempt=1, runner=runner)
        await _beat(ctx)
        await asyncio.sleep(0)
        assert not finishing[ended].cancelled()  # it returns its result itself
        assert finishing[taken].cancelled()  # the lease is w2's: stopped
        finishing[ended].cancel()
    finally:
        await ctx.aclose()
