"""Transient provider errors (the simulator's HTTP server answering 429/500) are retried within a
per-task budget, honouring Retry-After; each call records its retries; a task whose provider
stays unreachable stops resumable, and resuming replays what was recorded (nothing answered is
paid again). Real PostgreSQL, the real OpenAI client over HTTP."""

from __future__ import annotations

import random
from collections.abc import Callable

import httpx
from sqlalchemy import func, select

from adapt.engine import RunConfig
from adapt.llm.openai_compat.errors import retry_after_seconds
from adapt.llm.retry import BACKOFF_MAX, RetryBudget, backoff
from adapt.service.execute import ServiceContext, execute_task
from adapt.service.resume import resume_task
from adapt.store.models import LLMCallRow, NodeRow
from tests.service.helpers import events, insert_task, persisted_tree, task_row
from tests.service.test_execute import as_persisted, make_ctx, reference_tree
from tests.support.simserver import SimServer
from tests.support.workers import http_spec, persisted_prompt_hashes, sim_prompt_hashes


async def retries_recorded(ctx: ServiceContext, task_id: str) -> int:
    async with ctx.sessions() as s:
        return int((await s.execute(select(func.coalesce(func.sum(LLMCallRow.retries), 0))
                                    .where(LLMCallRow.task_id == task_id))).scalar_one())


async def test_transient_errors_are_retried_and_recorded_on_each_call(
    pg_url: str, sim_factory: Callable[..., SimServer]
) -> None:
    sim = sim_factory(error_rate=0.3, seed=3, retry_after=0.01)
    ctx = make_ctx(pg_url, "w1", llm_max_retries=8, llm_retry_budget=200,
                   llm_endpoints=[sim.base_url])
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11},
                                    model=http_spec(sim.base_url))
        assert await execute_task(ctx, task_id) == "succeeded"
        expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
        assert await persisted_tree(ctx.sessions, task_id) == expected
        log = sim.log()
        injected = log["counters"]["injected_errors"]
        assert injected > 0
        # every error the provider answered was retried, and counted on the call it delayed
        assert await retries_recorded(ctx, task_id) == injected
        evs = [e for e in await events(ctx.sessions, task_id) if e.type == "llm_call"]
        assert sum(e.data["call"]["retries"] for e in evs) == injected
    finally:
        await ctx.aclose()


async def test_provider_down_past_the_budget_stops_resumable_and_resume_pays_nothing_twice(
    pg_url: str, sim_factory: Callable[..., SimServer]
) -> None:
    sim = sim_factory(error_rate=0.3, seed=5, retry_after=0.01)
    stingy = make_ctx(pg_url, "w1", llm_max_retries=8, llm_retry_budget=0,
                      llm_endpoints=[sim.base_url])
    try:
        task_id = await insert_task(stingy.sessions, config={"seed": 11},
                                    model=http_spec(sim.base_url))
        assert await execute_task(stingy, task_id) == "error"
        task = await task_row(stingy.sessions, task_id)
        assert task.result is None and task.lease_owner is None
        assert task.error is not None and task.error.startswith("provider unavailable")
        assert "resume" in task.error
        async with stingy.sessions() as s:
            running = (await s.execute(select(func.count()).select_from(NodeRow).where(
                NodeRow.task_id == task_id, NodeRow.status == "running"))).scalar_one()
        assert running == 0  # no node left running inside a stopped task
        recorded_before = task.llm_calls
        assert 0 < recorded_before < 15
    finally:
        await stingy.aclose()

    ctx = make_ctx(pg_url, "w2", llm_max_retries=8, llm_retry_budget=200,
                   llm_endpoints=[sim.base_url])
    try:
        async with ctx.sessions() as s:
            row = await s.get(type(task), task_id)
            assert row is not None
            _, resumed = await resume_task(s, row)
        assert resumed
        assert await execute_task(ctx, task_id) == "succeeded"
        expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
        assert await persisted_tree(ctx.sessions, task_id) == expected
        final = await task_row(ctx.sessions, task_id)
        assert final.attempt == 2 and final.llm_calls == 15
        evs = await events(ctx.sessions, task_id)
        assert [e.seq for e in evs] == list(range(1, final.last_seq + 1))
        # the calls answered before the interruption were replayed: every answered request
        # is a recorded call, none was paid twice
        served = sim_prompt_hashes(sim.log())
        assert served == await persisted_prompt_hashes(ctx.sessions, task_id)
    finally:
        await ctx.aclose()


def test_retry_after_is_read_in_every_form_and_backoff_is_bounded() -> None:
    assert retry_after_seconds(httpx.Headers({"retry-after": "3"})) == 3.0
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None
    dated = retry_after_seconds(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}))
    assert dated == 0.0  # in the past: retry at once
    rng = random.Random(1)
    assert all(2.0 <= backoff(1, 2.0, rng=rng) <= 3.0 for _ in range(100))
    assert all(0 <= backoff(n, None, rng=rng) <= BACKOFF_MAX for n in range(1, 30))
    budget = RetryBudget(2)
    assert budget.take() and budget.take() and not budget.take()
