"""The real service for security tests: the app with its embedded worker on a fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from adapt.settings import Settings
from api.main import create_app
from tests.api.apiutil import parse_sse


@asynccontextmanager
async def service(database_url: str, *, dispatcher: Any = None,
                  **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    """``dispatcher``: e.g. the API tests' ``FakeDispatcher`` (then nothing runs the tasks)."""
    values: dict[str, Any] = {"ADAPT_DATABASE_URL": database_url, **settings}
    app = create_app(Settings.model_validate(values), dispatcher=dispatcher)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t",
                                     timeout=60) as client:
            yield client


async def run_to_end(client: httpx.AsyncClient, body: dict[str, Any],
                     headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Submit ``body``, follow its event stream to ``task.finished``, return the task."""
    created = await client.post("/tasks", json=body, headers=headers or {})
    assert created.status_code == 202, created.text
    task_id = created.json()["id"]
    stream = await client.get(f"/tasks/{task_id}/events", headers=headers or {})
    events, _ = parse_sse(stream.text)
    assert events and events[-1].event == "task.finished", stream.text[-500:]
    task: dict[str, Any] = (await client.get(f"/tasks/{task_id}", headers=headers or {})).json()
    return task
