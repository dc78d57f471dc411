"""Budgets end the branch cleanly; cancellation stops at the next LLM call; provider errors."""

from __future__ import annotations

import asyncio

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.errors import ProviderError
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.llm.testing import FunctionModel, ScriptedModel
from tests.engine.toy import ToyEnv

FAIL = "think: Task failed!"
PLAN = "Step 1: a\nStep 2: b\nExecution Order: (Step 1 AND Step 2)"


async def test_max_llm_calls(env: ToyEnv) -> None:
    sink = MemorySink()
    model = FunctionModel(lambda r: PLAN if r.role == "planner" else FAIL)
    cfg = RunConfig(d_max=3, budget={"max_llm_calls": 3})
    result = await run_task(env, {}, cfg, model, sink=sink)
    assert result.status == "budget_exceeded" and result.budget_exceeded == "llm_calls"
    assert result.usage.llm_calls == 3 and len(model.requests) == 3
    statuses = {n.id: n.status for n in sink.nodes.values()}
    # root failed (its branch was running), step a failed, step b never ran
    assert statuses == {1: "failed", 2: "failed", 3: "skipped"}
    assert "budget exceeded: llm_calls" in (sink.nodes[1].error or "")
    assert sink.result is not None and sink.result.status == "budget_exceeded"


async def test_max_tokens(env: ToyEnv) -> None:
    model = ScriptedModel(["ok " + "x" * 400] * 10)
    result = await run_task(env, {}, RunConfig(d_max=1, budget={"max_tokens": 150}), model)
    assert result.status == "budget_exceeded" and result.budget_exceeded == "tokens"
    assert result.usage.total_tokens >= 150 and result.usage.llm_calls < 10


async def test_max_nodes(env: ToyEnv) -> None:
    model = FunctionModel(lambda r: PLAN if r.role == "planner" else FAIL)
    result = await run_task(env, {}, RunConfig(d_max=3, budget={"max_nodes": 2}), model)
    assert result.status == "budget_exceeded" and result.budget_exceeded == "nodes"
    assert result.nodes == 2


async def test_max_cost(env: ToyEnv) -> None:
    model = ScriptedModel(["ok a"] * 10)
    result = await run_task(env, {}, RunConfig(d_max=1, budget={"max_cost_usd": 0.25}), model,
                            price=lambda m, u, s: 0.1)
    assert result.status == "budget_exceeded" and result.budget_exceeded == "cost_usd"
    assert result.usage.llm_calls == 3
    assert result.usage.cost_usd is not None and abs(result.usage.cost_usd - 0.3) < 1e-9


async def test_unknown_price_makes_cost_unknown(env: ToyEnv) -> None:
    model = ScriptedModel(["think: task completed"])
    result = await run_task(env, {}, RunConfig(d_max=1), model, price=lambda m, u, s: None)
    assert result.usage.cost_usd is None


async def test_deadline_bounds_a_slow_call(env: ToyEnv) -> None:
    async def slow(r: ChatRequest) -> str:
        await asyncio.sleep(5)
        return "ok"

    result = await run_task(env, {}, RunConfig(d_max=1, budget={"deadline_seconds": 0.2}),
                            FunctionModel(slow))
    assert result.status == "budget_exceeded" and result.budget_exceeded == "deadline_seconds"
    assert result.wall_seconds < 2


async def test_cancel_stops_before_the_next_llm_call(env: ToyEnv) -> None:
    sink = MemorySink()
    model = ScriptedModel(["ok a", "ok b", "ok c", "ok d"])
    result = await run_task(env, {}, RunConfig(d_max=1), model, sink=sink,
                            cancel=lambda: len(model.requests) >= 2)
    assert result.status == "cancelled" and len(model.requests) == 2
    assert sink.nodes[1].status == "cancelled"


async def test_async_cancel_callback(env: ToyEnv) -> None:
    async def cancelled() -> bool:
        return True

    model = ScriptedModel([])
    result = await run_task(env, {}, RunConfig(d_max=1), model, cancel=cancelled)
    assert result.status == "cancelled" and model.requests == []


class Broken:
    name = "broken"
    simulated = False

    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise ProviderError("provider said 503 after 3 retries")


async def test_provider_error_ends_with_status_error(env: ToyEnv) -> None:
    sink = MemorySink()
    result = await run_task(env, {}, RunConfig(d_max=1), Broken(), sink=sink)
    assert result.status == "error" and "503" in (result.error or "")
    assert sink.nodes[1].status == "failed"
