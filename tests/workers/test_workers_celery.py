"""A real Celery worker process (threads pool, one event loop) runs tasks dispatched through
Redis against PostgreSQL, with the simulated model served over HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig
from adapt.settings import Settings
from tests.service.helpers import events, insert_task, persisted_tree
from tests.service.test_execute import as_persisted, reference_tree
from tests.support.simserver import SimServer
from tests.support.workers import (
    BROKER_URL,
    Workers,
    persisted_prompt_hashes,
    sim_prompt_hashes,
    wait_finished,
)
from workers.dispatchers import CeleryDispatcher, make_dispatcher
from workers.embedded import EmbeddedRunner


async def test_a_worker_runs_a_dispatched_task_to_the_engine_tree(
    pg_sessions: async_sessionmaker[AsyncSession], workers: Workers, queue: str,
    sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory()
    workers.start(concurrency=8, llm_endpoints=[sim.base_url])
    task_id = await insert_task(pg_sessions, config={"seed": 11},
                                model=f"openai:sim:textcraft?capability=1@{sim.base_url}")
    dispatcher = CeleryDispatcher(BROKER_URL, queue=queue)
    assert await dispatcher.ready()
    await dispatcher.dispatch(task_id)
    rows = await wait_finished(pg_sessions, [task_id], 60, workers.logs)
    await dispatcher.aclose()

    task = rows[task_id]
    assert task.status == "succeeded" and task.attempt == 1 and task.lease_owner is None
    expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
    assert await persisted_tree(pg_sessions, task_id) == expected
    evs = await events(pg_sessions, task_id)
    assert [e.seq for e in evs] == list(range(1, task.last_seq + 1))
    assert evs[-1].type == "task.finished" and evs[-1].data["status"] == "succeeded"
    # every call reached the server exactly once
    assert sim_prompt_hashes(sim.log()) == await persisted_prompt_hashes(pg_sessions, task_id)
    assert task.llm_calls == 15


async def test_many_tasks_run_concurrently_on_one_worker_process(
    pg_sessions: async_sessionmaker[AsyncSession], workers: Workers, queue: str,
    sim_factory: Callable[..., SimServer],
) -> None:
    latency, n = 0.5, 30
    sim = sim_factory(latency=latency)
    worker = workers.start(concurrency=50, llm_endpoints=[sim.base_url])
    await asyncio.to_thread(worker.wait_ready)
    spec = f"openai:sim:textcraft?capability=1@{sim.base_url}"
    ids = [await insert_task(pg_sessions, config={"seed": i}, model=spec) for i in range(n)]
    dispatcher = CeleryDispatcher(BROKER_URL, queue=queue)
    t0 = time.monotonic()
    for task_id in ids:
        await dispatcher.dispatch(task_id)
    rows = await wait_finished(pg_sessions, ids, 120, workers.logs)
    wall = time.monotonic() - t0
    await dispatcher.aclose()

    assert all(r.status == "succeeded" for r in rows.values())
    assert all(r.attempt == 1 and r.lease_owner is None for r in rows.values())
    sequential = sum(r.llm_calls for r in rows.values()) * latency  # a lower bound
    assert wall < 0.3 * sequential, (wall, sequential, workers.logs())
    assert worker.proc.poll() is None


async def test_ready_is_false_quickly_when_the_broker_is_down() -> None:
    dispatcher = CeleryDispatcher("redis://127.0.0.1:1/0")
    t0 = time.monotonic()
    assert await dispatcher.ready() is False
    assert time.monotonic() - t0 < 3
    # dispatching does not raise either: the row stays queued for the sweeper
    t0 = time.monotonic()
    await dispatcher.dispatch("0" * 32)
    assert time.monotonic() - t0 < 5
    await dispatcher.aclose()


async def test_make_dispatcher_picks_by_broker(sqlite_url: str) -> None:
    celery = make_dispatcher(Settings.model_validate(
        {"ADAPT_DATABASE_URL": sqlite_url, "broker_url": BROKER_URL}))
    assert isinstance(celery, CeleryDispatcher) and await celery.ready()
    await celery.aclose()
    embedded = make_dispatcher(Settings.model_validate({"ADAPT_DATABASE_URL": sqlite_url}))
    assert isinstance(embedded, EmbeddedRunner)
    assert await embedded.ready()  # started on the running loop
    await embedded.aclose()
    assert not await embedded.ready()


def test_queue_depth_counts_waiting_messages(queue: str) -> None:
    from workers.celery_app import create_app, queue_depth, send_run_task

    app = create_app(BROKER_URL, queue=queue)
    assert queue_depth(app) == 0  # never declared
    send_run_task(app, "a" * 32)
    send_run_task(app, "b" * 32)
    assert queue_depth(app) == 2
    app.close()
