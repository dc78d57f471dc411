"""Bad input is a clear 4xx problem (RFC 9457), never a 500, and nothing is stored half-way."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from adapt.store import queries
from tests.api.apiutil import count_rows, create, run_engine

OK: dict[str, Any] = {"environment": "textcraft", "environment_config": {"seed": 3}}


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["type"] and body["title"] and body["detail"]
    assert "Traceback" not in response.text
    return body


def fields(body: dict[str, Any]) -> list[str]:
    return [e["field"] for e in body.get("errors") or []]


@pytest.mark.parametrize(
    ("payload", "field", "needle"),
    [
        ({**OK, "environment": "nope"}, "environment", "available: "),
        ({**OK, "environment_config": {"seed": "x"}}, "environment_config", "seed"),
        ({**OK, "environment_config": {"seed": 1, "goal": "craft beehive"}},
         "environment_config", "exactly one of seed"),
        ({**OK, "environment_config": {"seed": 1, "colour": "red"}}, "environment_config",
         "colour"),
        ({**OK, "environment_config": {}}, "environment_config", "exactly one of seed"),
        ({**OK, "strategy": "magic"}, "strategy", "available: adapt"),
        ({**OK, "profile": "fast"}, "profile", "'default' or 'paper'"),
        ({**OK, "planner": {"stop": ["x" * 40]}}, "planner.stop.0", "at most 32"),
        ({**OK, "d_max": 0}, "d_max", "greater than or equal to 1"),
        ({**OK, "d_max": 9}, "d_max", "less than or equal to 8"),
        ({**OK, "d_max": "three"}, "d_max", "valid integer"),
        ({**OK, "executor": "fast"}, "executor", "object"),
        ({**OK, "executor": {"max_steps": 0}}, "executor.max_steps", "greater than"),
        ({**OK, "executor": {"temperature": 5}}, "executor.temperature", "less than"),
        ({**OK, "executor": {"model": "gpt-4o"}}, "executor.model", "did you mean"),
        ({**OK, "executor": {"model": "sim:nope"}}, "executor.model", "unknown simulator"),
        ({**OK, "planner": {"model": "openai:x@ftp://host"}}, "planner.model", ""),
        ({**OK, "budget": {"max_llm_calls": -1}}, "budget.max_llm_calls", "greater than"),
        ({**OK, "budget": {"max_cost_usd": 0}}, "budget.max_cost_usd", "greater than"),
        ({**OK, "colour": "red"}, "colour", "unknown field"),
        ({**OK, "executor": {"foo": 1}}, "executor.foo", "unknown field"),
        ({**OK, "budget": {"max_dollars": 1}}, "budget.max_dollars", "unknown field"),
        ({"environment_config": {"seed": 3}}, "environment", "Field required"),
        ({**OK, "goal": ""}, "goal", "at least 1 character"),
        ({**OK, "environment_config": [1, 2]}, "environment_config", "dictionary"),
    ],
)
async def test_bad_task_bodies_are_422_naming_the_field(
    client: httpx.AsyncClient, app: FastAPI, payload: dict[str, Any], field: str, needle: str
) -> None:
    body = problem(await client.post("/tasks", json=payload), 422)
    assert field in fields(body), body
    assert needle in body["detail"], body
    assert await count_rows(app) == 0


@pytest.mark.parametrize(
    ("content", "headers", "slug", "needle", "status"),
    [
        (b'{"environment": "textcraft",', {"content-type": "application/json"},
         "malformed-json", "not valid JSON", 400),
        (b"environment=textcraft", {"content-type": "application/x-www-form-urlencoded"},
         "unsupported-content-type", "Content-Type: application/json", 415),
        (json.dumps(OK).encode(), {"content-type": "text/plain"}, "unsupported-content-type",
         "got text/plain", 415),
        (b"", {"content-type": "application/json"}, "validation-error", "body is required", 422),
        (b"[1, 2]", {"content-type": "application/json"}, "validation-error", "(body)", 422),
        (b'"just a string"', {"content-type": "application/json"}, "validation-error", "", 422),
        (b"\xff\xfe", {"content-type": "application/json"}, "malformed-json", "", 400),
    ],
)
async def test_malformed_bodies_are_problems(
    client: httpx.AsyncClient, app: FastAPI, content: bytes, headers: dict[str, str], slug: str,
    needle: str, status: int,
) -> None:
    """Every body-parsing failure: 400 malformed-json; a non-JSON type: 415 (issue 14)."""
    body = problem(await client.post("/tasks", content=content, headers=headers), status)
    assert body["type"].endswith(slug), body
    assert needle in body["detail"], body
    assert await count_rows(app) == 0


async def test_oversized_bodies_are_413_before_parsing(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    big = {**OK, "goal": "x" * 70_000}
    body = problem(await client.post("/tasks", json=big), 413)
    assert "65536 bytes" in body["detail"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it streams
        data = json.dumps(big).encode()
        for i in range(0, len(data), 8192):
            yield data[i:i + 8192]

    chunked = await client.post("/tasks", content=chunks(),
                                headers={"content-type": "application/json"})
    assert "content-length" not in chunked.request.headers
    problem(chunked, 413)
    assert await count_rows(app) == 0
    # a body just under the limit is parsed (and validated) normally
    parsed = problem(await client.post("/tasks", json={**OK, "goal": "x" * 60_000}), 422)
    assert fields(parsed) == ["goal"]


async def test_bad_query_parameters_are_422(client: httpx.AsyncClient) -> None:
    task = await create(client)
    tid = task["id"]
    cases = [
        ("/tasks?limit=0", "limit"),
        ("/tasks?limit=101", "limit"),
        ("/tasks?limit=ten", "limit"),
        ("/tasks?status=done", "status"),
        ("/tasks?cursor=not-a-cursor", "cursor"),
        ("/tasks?cursor=" + "A" * 40, "cursor"),
        (f"/tasks/{tid}/events?since=-1", "since"),
        (f"/tasks/{tid}/events?since=abc", "since"),
        (f"/tasks/{tid}/events?since=0&limit=0", "limit"),
        (f"/tasks/{tid}/nodes/abc", "node_id"),
        (f"/tasks/{tid}/nodes/0", "node_id"),
    ]
    for url, field in cases:
        body = problem(await client.get(url), 422)
        assert field in fields(body), (url, body)


async def test_bad_last_event_id_is_422(client: httpx.AsyncClient) -> None:
    task = await create(client)
    for value in ("abc", "-3", "1.5"):
        response = await client.get(f"/tasks/{task['id']}/events",
                                    headers={"Last-Event-ID": value,
                                             "Accept": "text/event-stream"})
        body = problem(response, 422)
        assert [f.lower() for f in fields(body)] == ["last-event-id"]


async def test_bad_idempotency_key_is_422(client: httpx.AsyncClient, app: FastAPI) -> None:
    body = problem(await client.post("/tasks", json=OK, headers={"Idempotency-Key": "k" * 300}),
                   422)
    assert "Idempotency-Key" in fields(body)
    assert await count_rows(app) == 0


async def test_unknown_node_is_404(client: httpx.AsyncClient, app: FastAPI) -> None:
    task = await create(client)
    await run_engine(app, task["id"])
    body = problem(await client.get(f"/tasks/{task['id']}/nodes/9999"), 404)
    assert "node 9999" in body["detail"]


async def test_unknown_route_and_wrong_method(client: httpx.AsyncClient) -> None:
    problem(await client.get("/nope"), 404)
    body = problem(await client.delete("/tasks"), 405)
    assert "DELETE" in body["detail"]


async def test_unexpected_errors_are_500_without_details(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(queries, "get_task", boom)
    response = await client.get("/tasks/" + "0" * 32)
    body = problem(response, 500)
    assert "secret" not in response.text
    assert "logged" in body["detail"]
    assert any("secret internals" in (r.exc_text or "") for r in caplog.records)
