"""Fixtures of the API tests: settings on a fresh database (SQLite and PostgreSQL), the app with
its lifespan running, an httpx client over ASGI, and a fake dispatcher that records ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from adapt.settings import Settings
from api.main import create_app
from api.sse import StreamOptions


class FakeDispatcher:
    def __init__(self) -> None:
        self.dispatched: list[str] = []
        self.is_ready = True
        self.closed = False

    async def dispatch(self, task_id: str) -> None:
        self.dispatched.append(task_id)

    async def ready(self) -> bool:
        return self.is_ready

    async def aclose(self) -> None:
        self.closed = True


def make_settings(database_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "ADAPT_DATABASE_URL": database_url,
        "broker_url": "redis://127.0.0.1:1/0",  # not embedded: no migrations at start-up
        "max_body_bytes": 65536,
        "llm_endpoints": ["http://127.0.0.1:11434/v1"],  # a local server users may name
    }
    values.update(extra)
    return Settings.model_validate(values)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture
def dispatcher() -> FakeDispatcher:
    return FakeDispatcher()


@pytest.fixture
async def app(settings: Settings, dispatcher: FakeDispatcher) -> AsyncIterator[FastAPI]:
    app = create_app(settings, dispatcher=dispatcher)
    app.state.stream_options = StreamOptions(poll_seconds=0.02, keepalive_seconds=15.0)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client
