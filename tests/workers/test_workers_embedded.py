"""The embedded runner runs tasks on the current event loop with the same lease semantics as
Celery workers: a closed or crashed runner's tasks resume in the next one. SQLite and
PostgreSQL; the simulated model over HTTP where a task must take a while."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.settings import Settings
from adapt.store.db import create_engine, session_factory
from adapt.store.models import Task, utcnow
from tests.service.helpers import insert_task, task_row
from tests.support.simserver import SimServer
from tests.support.workers import http_spec, llm_call_count, wait_finished
from tests.workers.test_workers_crash import check_complete
from workers.embedded import EmbeddedRunner


def settings(url: str, **values: object) -> Settings:
    return Settings.model_validate({"ADAPT_DATABASE_URL": url, "lease_seconds": 2,
                                    "heartbeat_seconds": 0.3, "sweep_seconds": 0.5, **values})


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url)
    yield session_factory(engine)
    await engine.dispose()


async def wait_calls(sessions: async_sessionmaker[AsyncSession], task_id: str, n: int) -> None:
    deadline = time.monotonic() + 30
    while await llm_call_count(sessions, task_id) < n:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)


async def test_tasks_run_and_finish(
    database_url: str, sessions: async_sessionmaker[AsyncSession],
) -> None:
    runner = EmbeddedRunner(settings(database_url))
    await runner.start()
    assert await runner.ready()
    ids = [await insert_task(sessions, config={"seed": s}) for s in (11, 5, 7)]
    for task_id in ids:
        await runner.dispatch(task_id)
        await runner.dispatch(task_id)  # a duplicate dispatch is harmless
    rows = await wait_finished(sessions, ids, 60)
    assert all(r.status == "succeeded" and r.attempt == 1 for r in rows.values())
    assert runner.running == []
    await runner.aclose()
    assert not await runner.ready()


async def test_start_resumes_queued_tasks(
    database_url: str, sessions: async_sessionmaker[AsyncSession],
) -> None:
    ids = [await insert_task(sessions, config={"seed": s}) for s in (1, 2)]
    runner = EmbeddedRunner(settings(database_url, sweep_seconds=60))
    await runner.start()  # the first sweep dispatches every queued task, however recent
    rows = await wait_finished(sessions, ids, 60)
    assert all(r.status == "succeeded" for r in rows.values())
    await runner.aclose()


async def test_aclose_mid_task_then_a_new_runner_resumes_it(
    database_url: str, sessions: async_sessionmaker[AsyncSession],
    sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory(latency=0.05)
    first = EmbeddedRunner(settings(database_url, lease_seconds=30, llm_endpoints=[sim.base_url]))
    await first.start()
    task_id = await insert_task(sessions, config={"seed": 11}, model=http_spec(sim.base_url))
    await first.dispatch(task_id)
    await wait_calls(sessions, task_id, 5)
    await first.aclose()  # cancels the run and hands the lease back
    interrupted = await task_row(sessions, task_id)
    assert interrupted.status == "running" and interrupted.attempt == 1
    assert await llm_call_count(sessions, task_id) < 15

    second = EmbeddedRunner(settings(database_url, llm_endpoints=[sim.base_url]))
    await second.start()
    rows = await wait_finished(sessions, [task_id], 30)
    assert rows[task_id].attempt == 2
    await check_complete(sessions, task_id, sim)
    await second.aclose()


async def test_a_crashed_runner_is_resumed_after_its_lease_expires(
    database_url: str, sessions: async_sessionmaker[AsyncSession],
    sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory(latency=0.05)
    first = EmbeddedRunner(settings(database_url, lease_seconds=1.5, llm_endpoints=[sim.base_url]))
    await first.start()
    task_id = await insert_task(sessions, config={"seed": 11}, model=http_spec(sim.base_url))
    await first.dispatch(task_id)
    await wait_calls(sessions, task_id, 5)
    # the process dies: nothing runs any more, nothing is handed back
    for task in [first.host.sweeper, *(slot.task for slot in first.ctx.running.values())]:
        assert task is not None
        task.cancel()
    await asyncio.sleep(0.05)
    crashed_at = time.monotonic()

    second = EmbeddedRunner(settings(database_url, llm_endpoints=[sim.base_url]))
    await second.start()
    await asyncio.sleep(0.5)
    assert (await task_row(sessions, task_id)).attempt == 1, "taken over before the lease ran out"
    rows = await wait_finished(sessions, [task_id], 30)
    assert time.monotonic() - crashed_at >= 1.0
    assert rows[task_id].attempt == 2
    await check_complete(sessions, task_id, sim)
    await second.aclose()
    await first.ctx.aclose()


async def test_concurrency_is_bounded(
    database_url: str, sessions: async_sessionmaker[AsyncSession],
    sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory(latency=0.02)
    runner = EmbeddedRunner(settings(database_url, concurrency=2, llm_endpoints=[sim.base_url]))
    await runner.start()
    ids = [await insert_task(sessions, config={"seed": s}, model=http_spec(sim.base_url))
           for s in range(5)]
    for task_id in ids:
        await runner.dispatch(task_id)
    most = 0
    while True:
        async with sessions() as s:
            states = dict((await s.execute(select(Task.status, func.count())
                                           .where(Task.id.in_(ids))
                                           .group_by(Task.status))).all())
        most = max(most, states.get("running", 0))
        if states.get("succeeded", 0) == len(ids):
            break
        await asyncio.sleep(0.01)
    assert most == 2
    await runner.aclose()


async def test_start_takes_back_the_leases_of_this_hosts_dead_processes(
    database_url: str, sessions: async_sessionmaker[AsyncSession],
) -> None:
    """Issue 14: a task whose embedded server crashed resumes at once on restart, not after its
    lease expires; a lease of a live process (or of another host) is left alone."""
    host = socket.gethostname()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    far = utcnow() + timedelta(hours=1)
    owners = {"dead": f"{host}:{gone.pid}:abc123", "live": f"{host}:{os.getppid()}:abc123",
              "elsewhere": f"another-host:{gone.pid}:abc123"}
    ids: dict[str, str] = {}
    for name, owner in owners.items():
        ids[name] = await insert_task(sessions, config={"seed": 11})
        async with sessions.begin() as session:
            await session.execute(update(Task).where(Task.id == ids[name]).values(
                status="running", attempt=1, lease_owner=owner, lease_expires_at=far,
                started_at=utcnow()))
    runner = EmbeddedRunner(settings(database_url, sweep_seconds=60))
    await runner.start()
    try:
        rows = await wait_finished(sessions, [ids["dead"]], 60)
        assert rows[ids["dead"]].status == "succeeded" and rows[ids["dead"]].attempt == 2
        async with sessions() as session:
            for name in ("live", "elsewhere"):
                row = await session.get(Task, ids[name])
                assert row is not None and row.status == "running"
                assert row.lease_owner == owners[name]
    finally:
        await runner.aclose()
