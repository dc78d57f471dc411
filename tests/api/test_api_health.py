"""Probes, /metrics, /environments, OpenAPI, and the app's lifespan (migrations, dispatcher)."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from adapt.errors import UserError
from adapt.settings import Settings
from adapt.store.db import create_engine
from adapt.store.models import LLMCallRow, NodeRow
from api.main import create_app
from api.serve import serve
from tests.api.apiutil import count_rows, create, run_engine, sessions_of
from tests.support.api import FakeDispatcher, make_settings
from tests.support.databases import postgres_database, sqlite_database


async def test_healthz(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


async def test_readyz_checks_database_and_dispatcher(
    client: httpx.AsyncClient, dispatcher: FakeDispatcher
) -> None:
    ok = await client.get("/readyz")
    assert ok.status_code == 200
    assert ok.json() == {"status": "ready", "checks": {"database": "ok", "dispatcher": "ok"}}

    dispatcher.is_ready = False
    down = await client.get("/readyz")
    assert down.status_code == 503
    assert down.headers["content-type"] == "application/problem+json"
    body = down.json()
    assert body["checks"] == {"database": "ok", "dispatcher": "not ready"}
    assert body["failed"] == ["dispatcher"] and "dispatcher" in body["detail"]

    async def broken() -> bool:
        raise ConnectionError("broker gone")

    dispatcher.ready = broken  # type: ignore[method-assign]
    failed = await client.get("/readyz")
    assert failed.status_code == 503
    assert failed.json()["checks"]["dispatcher"] == "failed: ConnectionError"


async def test_readyz_reports_a_dead_database(client: httpx.AsyncClient, app: FastAPI) -> None:
    await app.state.engine.dispose()
    good_url = app.state.engine.url
    app.state.engine = create_engine("postgresql://nobody@127.0.0.1:1/none")
    try:
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["failed"] == ["database"]
    finally:
        await app.state.engine.dispose()
        app.state.engine = create_engine(good_url.render_as_string(hide_password=False))


async def test_metrics_parse_and_come_from_the_database(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    done = await create(client)
    await run_engine(app, done["id"])
    await create(client)
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}

    tasks = {s.labels["status"]: s.value for s in families["adapt_tasks"].samples}
    assert tasks["succeeded"] == 1 and tasks["queued"] == 1 and tasks["failed"] == 0
    async with sessions_of(app)() as session:
        calls = int(await session.scalar(select(func.count()).select_from(LLMCallRow)) or 0)
        tokens = int(await session.scalar(select(func.sum(LLMCallRow.prompt_tokens))) or 0)
    assert calls > 0

    def value(family: str, sample: str | None = None) -> float:
        return next(s.value for s in families[family].samples
                    if s.name == (sample or family + "_total"))

    assert value("adapt_llm_calls") == calls
    assert value("adapt_llm_prompt_tokens") == tokens
    assert value("adapt_nodes") == await count_rows(app, NodeRow)
    latency = families["adapt_llm_call_latency_seconds"]
    buckets = [(s.labels["le"], s.value) for s in latency.samples if s.name.endswith("_bucket")]
    assert buckets[-1] == ("+Inf", calls)
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert value("adapt_llm_call_latency_seconds", "adapt_llm_call_latency_seconds_count") == calls
    wall = value("adapt_task_wall_seconds", "adapt_task_wall_seconds_count")
    assert wall == 1
    assert value("adapt_task_wall_seconds", "adapt_task_wall_seconds_sum") >= 0


async def test_metrics_include_the_genai_client_metrics_and_dropped_spans(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    """gen_ai.client.token.usage and gen_ai.client.operation.duration (the GenAI conventions'
    names, buckets and labels) from every recorded call; spans workers dropped, fleet-wide."""
    from adapt.store.traces import SPANS_DROPPED, TOKEN_BUCKETS, add_to_counter

    done = await create(client)
    await run_engine(app, done["id"])
    await add_to_counter(sessions_of(app), SPANS_DROPPED, 3)
    await add_to_counter(sessions_of(app), SPANS_DROPPED, 4)
    families = {f.name: f for f in text_string_to_metric_families(
        (await client.get("/metrics")).text)}
    async with sessions_of(app)() as session:
        calls = int(await session.scalar(select(func.count()).select_from(LLMCallRow)) or 0)
        prompt = int(await session.scalar(select(func.sum(LLMCallRow.prompt_tokens))) or 0)
        output = int(await session.scalar(select(func.sum(LLMCallRow.completion_tokens))) or 0)
    assert calls > 0
    (dropped,) = [s.value for s in families["adapt_otel_spans_dropped"].samples
                  if s.name == "adapt_otel_spans_dropped_total"]
    assert dropped == 7

    tokens = families["gen_ai_client_token_usage"].samples
    by_type = {t: [s for s in tokens if s.labels.get("gen_ai_token_type") == t]
               for t in ("input", "output")}
    for token_type, total in (("input", prompt), ("output", output)):
        samples = by_type[token_type]
        assert {s.labels["gen_ai_operation_name"] for s in samples} == {"text_completion"}
        assert {s.labels["gen_ai_provider_name"] for s in samples} == {"adapt.sim"}
        assert sum(s.value for s in samples if s.name.endswith("_sum")) == total
        assert sum(s.value for s in samples if s.name.endswith("_count")) == calls
        bounds = [s.labels["le"] for s in samples if s.name.endswith("_bucket")]
        assert bounds[:len(TOKEN_BUCKETS)] == [f"{b:g}" for b in TOKEN_BUCKETS]
    duration = families["gen_ai_client_operation_duration_seconds"].samples
    assert sum(s.value for s in duration if s.name.endswith("_count")) == calls
    assert [s.value for s in duration if s.labels.get("le") == "+Inf"] == [calls]


async def test_environments_describe_the_registry(client: httpx.AsyncClient) -> None:
    body = (await client.get("/environments")).json()
    textcraft = next(e for e in body["items"] if e["name"] == "textcraft")
    assert textcraft["description"] and textcraft["default_max_steps"] == 20
    assert "seed" in textcraft["config_schema"]["properties"]
    assert "adapt" in body["strategies"] and "react" in body["strategies"]


async def test_openapi_is_complete_with_examples(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    for path in ("/tasks", "/tasks/{task_id}", "/tasks/{task_id}/tree",
                 "/tasks/{task_id}/nodes/{node_id}", "/tasks/{task_id}/events",
                 "/tasks/{task_id}/cancel", "/environments", "/healthz", "/readyz", "/metrics"):
        assert path in spec["paths"], path
    post = spec["paths"]["/tasks"]["post"]
    examples = post["requestBody"]["content"]["application/json"]["examples"]
    assert {"seed", "explicit", "react"} <= examples.keys()
    assert {"202", "200", "409", "413", "422"} <= post["responses"].keys()
    events = spec["paths"]["/tasks/{task_id}/events"]["get"]
    assert "Last-Event-ID" in events["description"] and "text/event-stream" in str(events)
    assert "TaskCreate" in spec["components"]["schemas"]
    assert "bearer" in str(spec["components"]["securitySchemes"]).lower()


async def test_dispatch_failure_still_accepts_the_task(
    client: httpx.AsyncClient, dispatcher: FakeDispatcher, app: FastAPI
) -> None:
    async def broken(task_id: str) -> None:
        raise ConnectionError("broker down")

    dispatcher.dispatch = broken  # type: ignore[method-assign]
    response = await client.post("/tasks", json={"environment": "textcraft",
                                                 "environment_config": {"seed": 1}})
    assert response.status_code == 202
    assert await count_rows(app) == 1


# -- lifespan ---------------------------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgres"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        with sqlite_database(tmp_path, migrate=False) as url:
            yield url
    else:
        with postgres_database(migrate=False) as url:
            yield url


async def test_embedded_mode_migrates_at_start(empty_database: str) -> None:
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": empty_database})
    assert settings.embedded
    app = create_app(settings, dispatcher=FakeDispatcher())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            assert (await client.get("/tasks")).json() == {"items": [], "next_cursor": None}


async def test_broker_mode_refuses_pending_migrations(empty_database: str) -> None:
    app = create_app(make_settings(empty_database), dispatcher=FakeDispatcher())
    with pytest.raises(UserError, match="adapt db upgrade"):
        async with app.router.lifespan_context(app):
            pass


def test_serve_refuses_pending_migrations(empty_database: str) -> None:
    with pytest.raises(UserError, match="adapt db upgrade"):
        serve(make_settings(empty_database), host="127.0.0.1", port=1)


async def test_dispatcher_comes_from_workers_and_is_closed(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []

    def make_dispatcher(settings: Settings, sessions: Any) -> FakeDispatcher:
        made.append((settings, sessions))
        return FakeDispatcher()

    module = types.ModuleType("workers.dispatchers")
    module.make_dispatcher = make_dispatcher  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "workers.dispatchers", module)
    settings = make_settings(database_url)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        dispatcher = app.state.dispatcher
        assert made == [(settings, app.state.sessions)]
        assert isinstance(dispatcher, FakeDispatcher) and not dispatcher.closed
    assert dispatcher.closed
