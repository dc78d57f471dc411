"""A task with the tools executor through the API and the worker's execution (the real
database sink): POST /tasks accepts executor kind tools and planner output json, and the node
detail shows each tool call as a step and each LLM call with the tools it offered and the
calls it got; the event log carries the calls."""

from __future__ import annotations

import httpx

from adapt.service.execute import execute_task
from adapt.settings import Settings
from tests.api.apiutil import create
from tests.service.test_execute import make_ctx


async def test_a_tools_task_through_the_api(client: httpx.AsyncClient,
                                            settings: Settings) -> None:
    task = await create(client, {"environment": "textcraft", "environment_config": {"seed": 3},
                                 "executor": {"kind": "tools",
                                              "model": "sim:textcraft?capability=1"},
                                 "planner": {"output": "json"}})
    ctx = make_ctx(settings.database_url, "w1")
    try:
        assert await execute_task(ctx, task["id"]) == "succeeded"
    finally:
        await ctx.aclose()
    detail = (await client.get(f"/tasks/{task['id']}")).json()
    assert detail["status"] == "succeeded"
    assert detail["run_config"]["executor"]["kind"] == "tools"
    tree = (await client.get(f"/tasks/{task['id']}/tree")).json()["tree"]
    leaf = tree
    while leaf["children"]:
        leaf = leaf["children"][-1]
    node = (await client.get(f"/tasks/{task['id']}/nodes/{leaf['id']}")).json()
    steps, calls = node["steps"], node["llm_calls"]
    assert steps and all(s["extra"]["tool"]["name"] in ("get", "craft", "inventory",
                                                        "task_completed") for s in steps)
    executor = [c for c in calls if c["role"] == "executor"]
    assert executor and all(c["simulated"] for c in executor)
    first = executor[0]
    assert [t["function"]["name"] for t in first["tools"]][:3] == ["get", "craft", "inventory"]
    assert [m["role"] for m in first["messages"]][:2] == ["system", "user"]
    assert first["tool_calls"][0]["id"] == steps[0]["extra"]["tool"]["id"]
    if len(executor) > 1:  # a later call carries the earlier calls and their results
        roles = [m["role"] for m in executor[-1]["messages"]]
        assert "tool" in roles and any(m.get("tool_calls") for m in executor[-1]["messages"])
    root = (await client.get(f"/tasks/{task['id']}/nodes/{tree['id']}")).json()
    planner = [c for c in root["llm_calls"] if c["role"] == "planner"]
    assert planner and planner[0]["completion"].startswith("{") and planner[0]["tools"] is None
    events = (await client.get(f"/tasks/{task['id']}/events",
                               headers={"Accept": "application/json"})).json()["events"]
    logged = [e["data"]["call"] for e in events if e["type"] == "llm_call"]
    assert any(c["tool_calls"] for c in logged)


async def test_an_unknown_planner_output_names_the_field(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks", json={
        "environment": "textcraft", "environment_config": {"seed": 3},
        "planner": {"output": "yaml"}})
    assert response.status_code == 422
    assert "planner.output" in response.text and "'text' or 'json'" in response.text, \
        response.text
