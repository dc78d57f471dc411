"""The sweeper's query: tasks whose worker died or whose dispatch was lost, and only those;
concurrent sweepers do not hand out the same task twice. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service.sweeper import due_for_dispatch, release_leases, sweep_once
from adapt.store.db import create_engine, session_factory
from adapt.store.models import Task, utcnow
from tests.service.helpers import insert_task, task_row

GRACE = 30.0


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url)
    yield session_factory(engine)
    await engine.dispose()


async def make(sessions: async_sessionmaker[AsyncSession], **values: Any) -> str:
    task_id = await insert_task(sessions)
    async with sessions.begin() as s:
        await s.execute(update(Task).where(Task.id == task_id).values(**values))
    return task_id


async def scenario(sessions: async_sessionmaker[AsyncSession]) -> dict[str, str]:
    now = utcnow()

    def ago(seconds: float) -> datetime:
        return now - timedelta(seconds=seconds)

    return {
        # the worker died: last heartbeat 40 s ago, lease ran out 10 s ago
        "expired": await make(sessions, status="running", attempt=1, lease_owner="w1",
                              lease_expires_at=ago(10), heartbeat_at=ago(40),
                              updated_at=ago(40)),
        "healthy": await make(sessions, status="running", attempt=1, lease_owner="w2",
                              lease_expires_at=ago(-20), heartbeat_at=ago(10),
                              updated_at=ago(10)),
        "stale": await make(sessions, status="queued", updated_at=ago(GRACE + 5)),
        "fresh": await make(sessions, status="queued", updated_at=ago(GRACE - 5)),
        "finished": await make(sessions, status="succeeded", updated_at=ago(3600)),
        "failed_lease": await make(sessions, status="failed", lease_expires_at=ago(3600),
                                   updated_at=ago(3600)),
    }


async def test_expired_and_stale_tasks_are_due_healthy_ones_not(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ids = await scenario(sessions)
    due = await due_for_dispatch(sessions, utcnow(), queued_grace=GRACE)
    assert sorted(due) == sorted([ids["expired"], ids["stale"]])
    # handed out once: the same or another sweeper does not return them again within the grace
    assert await due_for_dispatch(sessions, utcnow(), queued_grace=GRACE) == []
    later = utcnow() + timedelta(seconds=GRACE + 1)  # the healthy lease has run out by then
    assert sorted(await due_for_dispatch(sessions, later, queued_grace=GRACE)) == sorted(
        [ids["expired"], ids["stale"], ids["fresh"], ids["healthy"]])


async def test_grace_zero_takes_every_queued_task(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ids = await scenario(sessions)
    due = await due_for_dispatch(sessions, utcnow(), queued_grace=0)
    assert sorted(due) == sorted([ids["expired"], ids["stale"], ids["fresh"]])


async def test_concurrent_sweepers_split_the_work(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ids = await scenario(sessions)
    results = await asyncio.gather(*(due_for_dispatch(sessions, utcnow(), queued_grace=GRACE)
                                     for _ in range(4)))
    handed = [i for r in results for i in r]
    assert sorted(handed) == sorted([ids["expired"], ids["stale"]])


async def test_released_leases_are_due_at_once(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    now = utcnow()
    mine = await make(sessions, status="running", attempt=1, lease_owner="me",
                      lease_expires_at=now + timedelta(seconds=60), updated_at=now)
    other = await make(sessions, status="running", attempt=1, lease_owner="other",
                       lease_expires_at=now + timedelta(seconds=60), updated_at=now)
    assert await release_leases(sessions, "me", [mine, other]) == [mine]
    assert (await task_row(sessions, other)).lease_owner == "other"
    await asyncio.sleep(0.01)
    assert await due_for_dispatch(sessions, utcnow(), queued_grace=GRACE) == [mine]
    assert await release_leases(sessions, "me", []) == []


async def test_sweep_once_dispatches_and_survives_a_failing_dispatch(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ids = await scenario(sessions)
    seen: list[str] = []

    async def dispatch(task_id: str) -> None:
        seen.append(task_id)
        if task_id == ids["expired"]:
            raise ConnectionError("broker down")

    got = await sweep_once(sessions, dispatch, grace=GRACE)
    assert sorted(seen) == sorted(got) == sorted([ids["expired"], ids["stale"]])


async def test_stale_queued_tasks_wait_while_the_broker_has_a_backlog(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ids = await scenario(sessions)
    dispatched: list[str] = []

    async def dispatch(task_id: str) -> None:
        dispatched.append(task_id)

    async def backlog() -> bool:
        return False

    assert await sweep_once(sessions, dispatch, grace=GRACE, include_queued=backlog) == [
        ids["expired"]]
    assert dispatched == [ids["expired"]]
    # the queue drained: the stale queued task goes out now
    assert await sweep_once(sessions, dispatch, grace=GRACE) == [ids["stale"]]
