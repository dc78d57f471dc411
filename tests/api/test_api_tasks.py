"""POST/GET /tasks, pagination, idempotency and cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI

from adapt.settings import SIM_DEFAULT_MODEL
from adapt.store.models import EventRow
from tests.api.apiutil import count_rows, create, run_engine, start_task
from tests.support.api import FakeDispatcher

FULL: dict[str, Any] = {
    "environment": "textcraft",
    "environment_config": {"goal": "craft beehive"},
    "goal": None,
    "strategy": "react",
    "d_max": 4,
    "executor": {"model": "sim:textcraft?capability=2", "max_steps": 15, "temperature": 0.5,
                 "patience": 5},
    "planner": {"model": "openai:llama3@http://127.0.0.1:11434/v1"},
    "budget": {"max_llm_calls": 50, "max_tokens": 10000, "max_cost_usd": 0.5,
               "deadline_seconds": 60, "max_nodes": 20, "max_prompt_chars": 50000},
    "monitor": {"enabled": False, "max_corrections": 2},
}


async def test_create_returns_202_with_location_and_dispatches(
    client: httpx.AsyncClient, dispatcher: FakeDispatcher
) -> None:
    response = await client.post("/tasks", json={"environment": "textcraft",
                                                 "environment_config": {"seed": 3}})
    assert response.status_code == 202, response.text
    task = response.json()
    assert response.headers["location"] == f"/tasks/{task['id']}"
    assert len(task["id"]) == 22 and int(task["id"], 16) >= 0  # 88 random bits
    assert task["status"] == "queued" and task["finished"] is False
    assert task["environment_config"] == {"seed": 3}
    assert task["strategy"] == "adapt" and task["d_max"] == 3
    assert task["models"] == {"executor": {"model": SIM_DEFAULT_MODEL, "simulated": True},
                              "planner": {"model": SIM_DEFAULT_MODEL, "simulated": True}}
    assert task["simulated"] is True
    assert task["usage"] == {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                             "cost_usd": 0.0}
    assert task["links"]["tree"] == f"/tasks/{task['id']}/tree"
    assert dispatcher.dispatched == [task["id"]]

    detail = (await client.get(f"/tasks/{task['id']}")).json()
    assert detail["id"] == task["id"] and detail["attempt"] == 0
    assert detail["run_config"]["strategy"] == "adapt"
    assert detail["run_config"]["executor"]["patience"] == 8
    assert detail["result"] is None
    for key in ("created_at", "started_at", "finished_at", "error", "goal", "success", "reward"):
        assert key in detail


async def test_profile_paper_is_stored_and_shown(client: httpx.AsyncClient) -> None:
    """profile paper: stored on the task and shown in the detail, with the settings it implies
    (explicit settings win) and the environment's paper prompt set."""
    response = await client.post("/tasks", json={
        "environment": "textcraft", "environment_config": {"seed": 3}, "profile": "paper",
        "executor": {"max_steps": 9}})
    assert response.status_code == 202, response.text
    task = response.json()
    assert task["profile"] == "paper"
    assert task["environment_config"] == {"seed": 3, "prompts": "paper"}
    detail = (await client.get(f"/tasks/{task['id']}")).json()
    assert detail["profile"] == "paper" and detail["run_config"]["profile"] == "paper"
    executor = detail["run_config"]["executor"]
    assert (executor["max_steps"], executor["patience"], executor["max_tokens"]) == (9, 8, 150)
    assert detail["run_config"]["monitor"]["enabled"] is False
    assert detail["run_config"]["planner"]["propagate_context"] is False
    assert detail["run_config"]["verification"] == "off"  # the papers' executors decide
    plain = (await client.post("/tasks", json={"environment": "textcraft",
                                               "environment_config": {"seed": 3}})).json()
    assert plain["profile"] == "default" and plain["environment_config"] == {"seed": 3}
    plain_detail = (await client.get(f"/tasks/{plain['id']}")).json()
    assert plain_detail["run_config"]["verification"] == "env"
    assert plain_detail["run_config"]["grammar"] is False
    chosen = (await client.post("/tasks", json={
        "environment": "textcraft", "environment_config": {"seed": 3}, "profile": "paper",
        "verification": "env", "grammar": True, "executor": {"act_only": True}})).json()
    chosen_config = (await client.get(f"/tasks/{chosen['id']}")).json()["run_config"]
    assert chosen_config["verification"] == "env" and chosen_config["grammar"] is True
    assert chosen_config["executor"]["act_only"] is True
    bad = await client.post("/tasks", json={"environment": "textcraft", "verification": "yes"})
    assert bad.status_code == 422 and "verification" in bad.text


async def test_profile_paper_takes_the_papers_d_max_unless_given(
        client: httpx.AsyncClient) -> None:
    """TextCraft under paper: d_max 4 (the paper's) when the request gives none; an explicit
    d_max wins; the default profile keeps 3."""
    async def d_max(**fields: object) -> int:
        response = await client.post("/tasks", json={
            "environment": "textcraft", "environment_config": {"seed": 3}, **fields})
        assert response.status_code == 202, response.text
        return int(response.json()["d_max"])

    assert await d_max(profile="paper") == 4
    assert await d_max(profile="paper", d_max=3) == 3
    assert await d_max() == 3


async def test_create_with_every_option_stores_the_run_config(client: httpx.AsyncClient) -> None:
    task = await create(client, FULL)
    detail = (await client.get(f"/tasks/{task['id']}")).json()
    assert detail["strategy"] == "react" and detail["d_max"] == 4
    assert detail["environment_config"] == {"goal": "craft beehive"}  # no null keys stored
    rc = detail["run_config"]
    assert rc["executor"]["max_steps"] == 15 and rc["executor"]["temperature"] == 0.5
    assert rc["executor"]["patience"] == 5
    assert rc["budget"] == FULL["budget"]
    assert rc["monitor"] == FULL["monitor"]
    assert "model" not in rc["executor"]
    assert detail["models"]["executor"] == {"model": "sim:textcraft?capability=2",
                                            "simulated": True}
    assert detail["models"]["planner"] == {
        "model": "openai:llama3@http://127.0.0.1:11434/v1", "simulated": False}
    assert detail["simulated"] is True


async def test_planner_defaults_to_the_executor_model(client: httpx.AsyncClient) -> None:
    task = await create(client, {"environment": "textcraft", "environment_config": {"seed": 1},
                                 "executor": {"model": "sim:textcraft?capability=3"}})
    assert task["models"]["planner"]["model"] == "sim:textcraft?capability=3"


async def test_remote_model_is_refused_with_how_to_allow_it(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    response = await client.post("/tasks", json={
        "environment": "textcraft", "environment_config": {"seed": 1},
        "executor": {"model": "openai:gpt-4o-mini"}})
    assert response.status_code == 422
    problem = response.json()
    assert "ADAPT_LLM_ENDPOINTS" in problem["detail"]
    assert problem["errors"][0]["field"] == "executor.model"
    assert await count_rows(app) == 0


async def test_list_paginates_newest_first_with_an_opaque_cursor(
    client: httpx.AsyncClient,
) -> None:
    ids = [(await create(client))["id"] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = (await client.get("/tasks", params=params)).json()
        seen += [t["id"] for t in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == list(reversed(ids))


async def test_list_filters_by_status_and_environment(client: httpx.AsyncClient) -> None:
    a = await create(client)
    b = await create(client)
    await client.post(f"/tasks/{a['id']}/cancel")
    cancelled = (await client.get("/tasks", params={"status": "cancelled"})).json()
    assert [t["id"] for t in cancelled["items"]] == [a["id"]]
    queued = (await client.get("/tasks", params={"status": "queued"})).json()
    assert [t["id"] for t in queued["items"]] == [b["id"]]
    other = (await client.get("/tasks", params={"environment": "nope"})).json()
    assert other == {"items": [], "next_cursor": None}
    every = (await client.get("/tasks", params={"environment": "textcraft"})).json()
    assert len(every["items"]) == 2


async def test_list_filters_by_strategy(client: httpx.AsyncClient) -> None:
    adapt = await create(client)
    react = await create(client, {"environment": "textcraft", "environment_config": {"seed": 3},
                                  "strategy": "react"})
    only = (await client.get("/tasks", params={"strategy": "react"})).json()
    assert [t["id"] for t in only["items"]] == [react["id"]]
    both = (await client.get("/tasks", params={"strategy": "adapt", "status": "queued"})).json()
    assert [t["id"] for t in both["items"]] == [adapt["id"]]


async def test_idempotency_same_body_same_task_different_body_409(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    body = {"environment": "textcraft", "environment_config": {"seed": 3}}
    headers = {"Idempotency-Key": "k-1"}
    first = await client.post("/tasks", json=body, headers=headers)
    assert first.status_code == 202
    # the same request, spelled with its defaults, is the same request
    again = await client.post("/tasks", json={**body, "d_max": 3, "strategy": "adapt"},
                              headers=headers)
    assert again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["location"] == f"/tasks/{first.json()['id']}"

    conflict = await client.post("/tasks", json={**body, "d_max": 2}, headers=headers)
    assert conflict.status_code == 409
    assert conflict.json()["task_id"] == first.json()["id"]
    assert "Idempotency-Key" in conflict.json()["detail"]
    assert await count_rows(app) == 1

    other = await client.post("/tasks", json=body, headers={"Idempotency-Key": "k-2"})
    assert other.status_code == 202 and other.json()["id"] != first.json()["id"]


async def test_concurrent_requests_with_one_key_create_one_task(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    body = {"environment": "textcraft", "environment_config": {"seed": 3}}
    responses = await asyncio.gather(*[
        client.post("/tasks", json=body, headers={"Idempotency-Key": "race"})
        for _ in range(6)
    ])
    assert sorted(r.status_code for r in responses) == [200] * 5 + [202]
    assert len({r.json()["id"] for r in responses}) == 1
    assert await count_rows(app) == 1


async def test_cancel_queued_task_is_immediate_and_idempotent(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    first = await client.post(f"/tasks/{task['id']}/cancel")
    assert first.status_code == 200
    cancelled = first.json()
    assert cancelled["status"] == "cancelled" and cancelled["finished"] is True
    assert cancelled["cancel_requested"] is True and cancelled["finished_at"] is not None
    assert cancelled["last_seq"] == 1

    second = await client.post(f"/tasks/{task['id']}/cancel")
    assert second.status_code == 200
    assert second.json()["last_seq"] == 1 and second.json()["status"] == "cancelled"
    assert await count_rows(app, EventRow) == 1

    events = (await client.get(f"/tasks/{task['id']}/events", params={"since": 0})).json()
    assert [e["type"] for e in events["events"]] == ["task.finished"]
    assert events["events"][0]["data"]["status"] == "cancelled"
    assert events["finished"] is True


async def test_cancel_running_task_only_requests_it(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    await start_task(app, task["id"])
    response = await client.post(f"/tasks/{task['id']}/cancel")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "running" and body["cancel_requested"] is True
    assert body["last_seq"] == 0
    assert await count_rows(app, EventRow) == 0


async def test_cancel_finished_task_returns_it_unchanged(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    await run_engine(app, task["id"])
    before = (await client.get(f"/tasks/{task['id']}")).json()
    assert before["status"] == "succeeded"
    after = await client.post(f"/tasks/{task['id']}/cancel")
    assert after.status_code == 200
    body = after.json()
    assert body["status"] == "succeeded" and body["cancel_requested"] is False
    assert body["updated_at"] == before["updated_at"]


async def test_finished_task_reports_usage_and_result(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    await run_engine(app, task["id"])
    detail = (await client.get(f"/tasks/{task['id']}")).json()
    assert detail["status"] == "succeeded" and detail["success"] is True
    assert detail["reward"] == 1.0
    assert detail["usage"]["llm_calls"] > 0 and detail["usage"]["prompt_tokens"] > 0
    assert detail["result"]["status"] == "succeeded"
    assert detail["resolved_goal"]
    assert detail["started_at"] and detail["finished_at"]


async def test_unknown_and_overlong_task_ids_are_404(client: httpx.AsyncClient) -> None:
    for task_id in ("0" * 32, "x" * 200, "nope"):
        for method, path in (("GET", ""), ("POST", "/cancel"), ("GET", "/tree"),
                             ("GET", "/events?since=0"), ("GET", "/nodes/1")):
            response = await client.request(method, f"/tasks/{task_id}{path}")
            assert response.status_code == 404, (method, path, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["status"] == 404

