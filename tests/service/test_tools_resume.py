"""A task run by the tools executor through the service, on SQLite and PostgreSQL: the
persisted tree is the engine's, and a worker that dies mid-task is resumed by replay (the
recorded tool calls are answered again from the database, nothing is paid for twice) to the
same tree as an uninterrupted run."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.service.execute import execute_task
from adapt.sim import from_spec
from adapt.store.models import Task, utcnow
from adapt.store.prompts import call_prompts
from tests.service.helpers import insert_task, persisted_tree, task_row
from tests.service.test_execute import SIM, Counting, as_persisted, make_ctx

TOOLS = RunConfig(d_max=4, executor={"kind": "tools"}, planner={"output": "json"})


async def reference(seed: int) -> MemorySink:
    sink = MemorySink()
    await run_task(TextCraft(), {"seed": seed}, TOOLS, from_spec(SIM), sink=sink)
    return sink


async def test_a_tools_task_resumed_after_a_crash_pays_nothing_twice(database_url: str) -> None:
    expected = await reference(11)
    total = len(expected.calls)
    cut = total // 2
    first = Counting(from_spec(SIM), hang_after=cut)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11}, run_config=TOOLS)
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 10)
    run1.cancel()  # the worker dies mid-task (its lease stays)
    with pytest.raises(asyncio.CancelledError):
        await run1

    second = Counting(from_spec(SIM))
    ctx2 = make_ctx(database_url, "w2", second)
    async with ctx2.sessions.begin() as s:  # let the lease expire
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    try:
        assert await execute_task(ctx2, task_id) == "succeeded"
        task = await task_row(ctx2.sessions, task_id)
        assert task.attempt == 2 and task.llm_calls == total
        assert second.calls == total - cut, "recorded tool calls were paid for again"
        assert await persisted_tree(ctx2.sessions, task_id) == as_persisted(expected)
        async with ctx2.sessions() as session:
            stored = await call_prompts(session, task_id)
        for call in expected.calls:  # every call's messages and tools read back as sent
            assert stored[call.id].messages == call.messages
            assert stored[call.id].tools == call.tools
    finally:
        await ctx1.aclose()
        await ctx2.aclose()
