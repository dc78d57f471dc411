"""Skill reuse and resume (issue 31): a task looks the library up as of its first attempt's
start, so entries another task added while it was interrupted do not change its resumed run
(which then matches its recording); a task started after them replays them. Real SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update

from adapt.engine import RunConfig, run_task
from adapt.engine.experience import MemoryLibrary
from adapt.envs.textcraft import TextCraft
from adapt.service.execute import execute_task
from adapt.sim import from_spec
from adapt.store import library
from adapt.store.models import Task, utcnow
from tests.service.helpers import insert_task, persisted_tree
from tests.service.test_execute import SIM, Counting, as_persisted, make_ctx, reference_tree

REUSE = RunConfig(d_max=4, reuse={"skills": True})


async def test_a_resumed_task_finds_what_its_first_attempt_found(database_url: str) -> None:
    first = Counting(from_spec(SIM), hang_after=5)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11}, run_config=REUSE)
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 30)
    run1.cancel()  # the worker dies mid-task
    with pytest.raises(asyncio.CancelledError):
        await run1
    await ctx1.aclose()

    # meanwhile another task of the tenant learned every solution of this game
    learned = MemoryLibrary()
    await run_task(TextCraft(), {"seed": 11}, REUSE, from_spec(SIM),
                   library=learned.for_task("other"))
    async with ctx1.sessions() as s:
        done = await library.import_entries(s, "default", learned.export()["entries"])
        assert done.added > 0
    async with ctx1.sessions.begin() as s:  # the dead worker's lease expires
        await s.execute(update(Task).where(Task.id == task_id).values(
            lease_expires_at=utcnow() - timedelta(seconds=1)))

    second = Counting(from_spec(SIM))
    ctx2 = make_ctx(database_url, "w2", second)
    try:
        assert await execute_task(ctx2, task_id) == "succeeded"
        # the resumed run ignores the entries made after the task started: the same tree as
        # one uninterrupted run without them, and the recorded calls replayed, not paid again
        expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
        assert await persisted_tree(ctx2.sessions, task_id) == expected
        assert second.calls == 15 - 5

        # a task started now replays them: its root is solved with no call
        later = await insert_task(ctx2.sessions, config={"seed": 11}, run_config=REUSE)
        assert await execute_task(ctx2, later) == "succeeded"
        tree = await persisted_tree(ctx2.sessions, later)
        root = tree["nodes"][1]
        assert root["termination"] == "reused" and root["reused"]["imported"] is True
        assert list(tree["nodes"]) == [1] and second.calls == 10
    finally:
        await ctx2.aclose()
