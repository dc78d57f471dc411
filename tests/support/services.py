"""Service fixtures: PostgreSQL and SQLite databases, Celery queues and worker processes, the
simulator's server. A pytest plugin (``pytest_plugins`` in the root ``conftest.py``), so every
test directory may use them; the database, queue and worker modules are imported inside the
fixtures, so a test that uses none of them (``pytest tests/engine``) loads no database or queue
client."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from tests.support.simserver import SimServer
    from tests.support.workers import Workers


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh, migrated database: SQLite and the real PostgreSQL."""
    from tests.support.databases import postgres_database, sqlite_database

    if request.param == "sqlite":
        with sqlite_database(tmp_path_factory.mktemp("db")) as url:
            yield url
    else:
        with postgres_database() as url:
            yield url


@pytest.fixture
def pg_url() -> Iterator[str]:
    from tests.support.databases import postgres_database

    with postgres_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    from tests.support.databases import sqlite_database

    with sqlite_database(tmp_path) as url:
        yield url


@pytest.fixture
async def pg_sessions(pg_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    from adapt.store.db import create_engine, session_factory

    engine = create_engine(pg_url)
    yield session_factory(engine)
    await engine.dispose()


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue no other test run uses; its Redis keys are deleted afterwards."""
    import redis

    from tests.support.workers import BROKER_URL

    name = f"adapt-test-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(BROKER_URL)
    try:  # the queue and kombu's binding keys for it
        keys = list(client.scan_iter(match=f"*{name}*"))
        if keys:
            client.delete(*keys)
        # messages a killed worker left unacknowledged (kombu would restore them in an hour)
        for tag, raw in client.hscan_iter("unacked"):
            try:
                routing_key = json.loads(raw)[2]
            except (ValueError, IndexError, TypeError):
                continue
            if routing_key == name:
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    finally:
        client.close()


@pytest.fixture
def workers(pg_url: str, queue: str, tmp_path: Path) -> Iterator[Workers]:
    from tests.support.workers import Workers

    ws = Workers(pg_url, queue, tmp_path)
    yield ws
    ws.stop_all()


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., SimServer]]:
    from tests.support.simserver import start_sim_server, stop_sim_server

    started: list[SimServer] = []

    def start(**options: object) -> SimServer:
        sim = start_sim_server(**options)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        stop_sim_server(sim)
