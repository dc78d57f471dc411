"""Issue 14, bounded resources: operator defaults and maximums for every budget figure, the
environment_config size, the prompt size, per-tenant active tasks and submissions per minute
(429 with Retry-After), prompts stored once; and budget figures that agree with the tree."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from adapt.store.db import create_engine, session_factory
from adapt.store.event_log import read_events, stored_events
from adapt.store.models import LLMCallRow, PromptBlock
from adapt.store.prompts import call_prompts
from tests.security.service import run_to_end, service
from tests.support.api import FakeDispatcher

BASE: dict[str, Any] = {"environment": "textcraft", "environment_config": {"seed": 3}}
QUEUED = {"broker_url": "redis://127.0.0.1:1/0"}


async def test_budgets_get_the_operators_defaults_and_are_capped(database_url: str) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED,
                       default_budget={"max_llm_calls": 50, "deadline_seconds": 600},
                       max_budget={"max_llm_calls": 100, "max_tokens": 1000,
                                   "max_prompt_chars": 5000}) as client:
        created = await client.post("/tasks", json={**BASE, "budget": {"max_nodes": 7}})
        assert created.status_code == 202, created.text
        detail = (await client.get(f"/tasks/{created.json()['id']}")).json()
        assert detail["run_config"]["budget"] == {
            "max_llm_calls": 50, "max_tokens": 1000, "max_nodes": 7, "max_cost_usd": None,
            "deadline_seconds": 600.0, "max_prompt_chars": 5000}
        for field, value in (("max_llm_calls", 101), ("max_tokens", 1001),
                             ("max_prompt_chars", 5001)):
            refused = await client.post("/tasks", json={**BASE, "budget": {field: value}})
            assert refused.status_code == 422, refused.text
            assert refused.json()["errors"][0]["field"] == f"budget.{field}"


async def test_a_large_environment_config_is_refused(database_url: str) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED,
                       max_config_bytes=1000) as client:
        big = {"environment": "textcraft", "environment_config": {"goal": "x" * 2000}}
        response = await client.post("/tasks", json=big)
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == "environment_config"
        assert "ADAPT_MAX_CONFIG_BYTES" in response.text


async def test_active_tasks_and_submissions_per_minute_are_429_with_retry_after(
    database_url: str,
) -> None:
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED,
                       tenant_max_active_tasks=2) as client:
        for _ in range(2):
            assert (await client.post("/tasks", json=BASE)).status_code == 202
        refused = await client.post("/tasks", json=BASE)
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) > 0
        assert refused.headers["content-type"] == "application/problem+json"
        first = (await client.get("/tasks")).json()["items"][0]["id"]
        await client.post(f"/tasks/{first}/cancel")  # one slot free again
        assert (await client.post("/tasks", json=BASE)).status_code == 202
    async with service(database_url, dispatcher=FakeDispatcher(), **QUEUED,
                       tenant_submissions_per_minute=4) as client:  # 3 in the last minute
        assert (await client.post("/tasks", json=BASE)).status_code == 202
        refused = await client.post("/tasks", json=BASE)
        assert refused.status_code == 429
        assert 0 < int(refused.headers["retry-after"]) <= 60


async def test_prompts_are_stored_once_and_a_long_prompt_ends_the_branch(
    database_url: str,
) -> None:
    goal = "craft beehive " + "please " * 600  # ~4.2 KB in every prompt
    body = {"environment": "textcraft", "environment_config": {"seed": 3}, "goal": goal,
            "strategy": "react", "d_max": 1, "budget": {"max_llm_calls": 4}}
    async with service(database_url) as client:
        task = await run_to_end(client, body)
        capped = await run_to_end(client, {**body, "budget": {"max_prompt_chars": 3000}})
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            calls = (await session.execute(select(LLMCallRow).where(
                LLMCallRow.task_id == task["id"]))).scalars().all()
            events = [e for e in await stored_events(session, task["id"])
                      if e[1] == "llm_call"]
            prompts = await call_prompts(session, task["id"])
            shown = await read_events(session, task["id"], 0, None)
            blocks = (await session.execute(select(PromptBlock.text))).scalars().all()
    finally:
        await engine.dispose()
    assert len(calls) == len(events) == len(prompts) == 4
    assert all(len(p.prompt or json.dumps(p.messages)) > len(goal) for p in prompts.values())
    # the four prompts extend each other: the goal is stored once, not once per call
    assert sum(b.count(goal.strip()) for b in blocks) == 1
    # the stored event names its call; read whole, it shows no prompt either
    assert all(set(e[4]) == {"call_id"} for e in events)
    assert all(e.data["call"]["prompt"] is None and e.data["call"]["messages"] is None
               for e in shown if e.type == "llm_call")
    assert sum(len(json.dumps(e[4])) for e in events) < len(goal)
    assert capped["status"] == "budget_exceeded" and capped["usage"]["llm_calls"] == 0
    assert capped["result"]["budget_exceeded"] == "prompt_chars"


async def test_max_nodes_figures_agree_with_the_tree(database_url: str) -> None:
    async with service(database_url) as client:
        task = await run_to_end(client, {**BASE, "d_max": 3, "budget": {"max_nodes": 1}})
    assert task["status"] == "budget_exceeded" and task["nodes_count"] == 1
    assert "limit 1, spent 1" in task["error"]
