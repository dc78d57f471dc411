"""Fixtures of the API tests: settings on a fresh database (SQLite and PostgreSQL), the app with
its lifespan running, an httpx client over ASGI, and a fake dispatcher that records ids."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from adapt.settings import Settings
from api.main import create_app
from api.sse import StreamOptions
from tests.support.api import FakeDispatcher, make_settings


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
