"""Issue 14, item 3: characters no database stores (NUL, lone surrogates) are a 422 naming the
field in any input, and model output holding them is stored with U+FFFD: the task goes on and
no user-visible error contains SQL. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.security.capture import capture_server
from tests.security.service import run_to_end, service

BASE: dict[str, Any] = {"environment": "textcraft", "environment_config": {"seed": 3}}


@pytest.mark.parametrize(("body", "field"), [
    ({**BASE, "goal": "craft\u0000beehive"}, "goal"),
    ({"environment": "textcraft", "environment_config": {"goal": "x\u0000"}},
     "environment_config.goal"),
    ({"environment": "textcraft", "environment_config": {"commands": ["a", "b\u0000"]}},
     "environment_config.commands.1"),
    ({**BASE, "goal": "half a pair \ud800"}, "goal"),
    ({**BASE, "executor": {"model": "sim:textcraft\u0000"}}, "executor.model"),
])
async def test_bad_characters_in_the_body_are_a_422_naming_the_field(
    database_url: str, body: dict[str, Any], field: str
) -> None:
    raw = json.dumps(body)  # \u0000 and \ud800 escapes: valid JSON
    async with service(database_url, broker_url="redis://127.0.0.1:1/0") as client:
        response = await client.post("/tasks", content=raw,
                                     headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == field
        assert (await client.get("/tasks")).json()["items"] == []


@pytest.mark.parametrize(("url", "field", "location"), [
    ("/tasks/abc%00def", "task_id", "path"),
    ("/tasks/abc%00def/tree", "task_id", "path"),
    ("/tasks/abc%00def/events?since=0", "task_id", "path"),
    ("/tasks/abc%00def/cancel", "task_id", "path"),
    ("/tasks?environment=text%00craft", "environment", "query"),
    ("/tasks?cursor=%00", "cursor", "query"),
])
async def test_bad_characters_in_paths_and_queries_are_a_422(
    database_url: str, url: str, field: str, location: str
) -> None:
    async with service(database_url, broker_url="redis://127.0.0.1:1/0") as client:
        method = "POST" if url.endswith("/cancel") else "GET"
        response = await client.request(method, url)
        assert response.status_code == 422, response.text
        error = response.json()["errors"][0]
        assert (error["field"], error["location"]) == (field, location)


async def test_model_output_with_nul_is_stored_replaced_and_the_task_goes_on(
    database_url: str,
) -> None:
    with capture_server(text="think: \u0000 I hold\u0000 nothing.") as up:
        async with service(database_url,
                           llm_endpoints=[{"base_url": up.base_url, "name": "lab"}]) as client:
            task = await run_to_end(client, {
                **BASE, "strategy": "react", "d_max": 1, "budget": {"max_llm_calls": 2},
                "executor": {"model": f"openai:m@{up.base_url}"}})
            node = (await client.get(f"/tasks/{task['id']}/nodes/1")).json()
            events = (await client.get(f"/tasks/{task['id']}/events?since=0")).text
    assert task["status"] == "budget_exceeded", task
    assert task["usage"]["llm_calls"] == 2
    assert node["llm_calls"][0]["completion"] == "think: \ufffd I hold\ufffd nothing."
    assert "\\u0000" not in events
    for text in (task["error"] or "", events):
        assert "INSERT" not in text and "SQL" not in text
