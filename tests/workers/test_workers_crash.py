"""A worker process dies (kill -9) mid-task: another worker's sweeper re-dispatches the task once
its lease expires, and it resumes by replay without paying for finished LLM calls again. A
worker stopped cleanly (SIGTERM) hands its tasks over at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig
from tests.service.helpers import events, insert_task, persisted_tree, task_row
from tests.service.test_execute import as_persisted, reference_tree
from tests.support.simserver import SimServer
from tests.support.workers import (
    BROKER_URL,
    Workers,
    http_spec,
    llm_call_count,
    persisted_prompt_hashes,
    sim_prompt_hashes,
    wait_finished,
)
from workers.dispatchers import CeleryDispatcher

SHORT_LEASE = {"lease_seconds": 2, "heartbeat_seconds": 0.5, "sweep_seconds": 1}


async def wait_calls(sessions: async_sessionmaker[AsyncSession], task_id: str, n: int,
                     workers: Workers, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while await llm_call_count(sessions, task_id) < n:
        assert time.monotonic() < deadline, workers.logs()
        await asyncio.sleep(0.05)


async def check_complete(sessions: async_sessionmaker[AsyncSession], task_id: str,
                         sim: SimServer) -> None:
    task = await task_row(sessions, task_id)
    assert task.status == "succeeded" and task.llm_calls == 15 and task.lease_owner is None
    expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
    assert await persisted_tree(sessions, task_id) == expected
    evs = await events(sessions, task_id)
    assert [e.seq for e in evs] == list(range(1, task.last_seq + 1))
    assert [e.ordinal for e in evs] == list(range(1, len(evs) + 1))
    # finished calls were not sent again: at most the one in flight at the kill is repeated
    persisted = await persisted_prompt_hashes(sessions, task_id)
    served = sim_prompt_hashes(sim.log())
    assert sum(persisted.values()) == 15
    assert not persisted - served, "a persisted call never reached the server"
    assert sum((served - persisted).values()) <= 1, served - persisted
    assert sum(served.values()) <= task.llm_calls + 1


async def test_kill_9_mid_task_then_another_worker_resumes_it(
    pg_sessions: async_sessionmaker[AsyncSession], workers: Workers, queue: str,
    sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory(latency=0.2)
    a = workers.start(concurrency=4, llm_endpoints=[sim.base_url], **SHORT_LEASE)
    task_id = await insert_task(pg_sessions, config={"seed": 11}, model=http_spec(sim.base_url))
    dispatcher = CeleryDispatcher(BROKER_URL, queue=queue)
    await dispatcher.dispatch(task_id)
    await dispatcher.aclose()
    await wait_calls(pg_sessions, task_id, 6, workers)

    a.kill9()  # the whole worker process: loop, lease heartbeat, unacked message
    before = await task_row(pg_sessions, task_id)
    assert before.status == "running" and before.attempt == 1
    done_before = await llm_call_count(pg_sessions, task_id)
    assert 6 <= done_before < 15

    workers.start(concurrency=4, llm_endpoints=[sim.base_url], **SHORT_LEASE)  # B: its sweeper finds the expired lease
    rows = await wait_finished(pg_sessions, [task_id], 60, workers.logs)
    assert rows[task_id].attempt == 2
    await check_complete(pg_sessions, task_id, sim)


async def test_sigterm_hands_the_task_over_without_waiting_for_the_lease(
    pg_sessions: async_sessionmaker[AsyncSession], workers: Workers, queue: str,
    sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory(latency=0.2)
    # a long lease: only a clean hand-over lets B resume before the test's deadline
    long_lease = {"lease_seconds": 120, "heartbeat_seconds": 1, "sweep_seconds": 60}
    a = workers.start(concurrency=4, llm_endpoints=[sim.base_url], **long_lease)
    task_id = await insert_task(pg_sessions, config={"seed": 11}, model=http_spec(sim.base_url))
    dispatcher = CeleryDispatcher(BROKER_URL, queue=queue)
    await dispatcher.dispatch(task_id)
    await dispatcher.aclose()
    await wait_calls(pg_sessions, task_id, 6, workers)

    t0 = time.monotonic()
    assert a.stop(timeout=20) == 0
    assert time.monotonic() - t0 < 10, "warm shutdown waited for the task"
    assert "handed 1 task(s) back to the queue" in a.tail(200), a.tail()
    handed = await task_row(pg_sessions, task_id)
    assert handed.status == "running" and handed.attempt == 1
    assert handed.lease_expires_at is not None and handed.lease_expires_at <= handed.updated_at

    workers.start(concurrency=4, llm_endpoints=[sim.base_url], **long_lease)  # B takes the re-dispatched message at once
    rows = await wait_finished(pg_sessions, [task_id], 40, workers.logs)
    assert rows[task_id].attempt == 2
    await check_complete(pg_sessions, task_id, sim)
