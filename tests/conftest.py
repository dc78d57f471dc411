"""Shared fixtures. No test may reach a real LLM provider: the guard is locked off here."""

from __future__ import annotations

import os

os.environ["ADAPT_ALLOW_REMOTE_LLM"] = "0"

from adapt.llm import guard

guard.forbid_remote()  # nothing in the test process can re-enable remote LLM endpoints

import pytest  # noqa: E402


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A fresh, migrated database: SQLite and the real PostgreSQL."""
    from tests.dbutil import postgres_database, sqlite_database

    if request.param == "sqlite":
        with sqlite_database(tmp_path_factory.mktemp("db")) as url:
            yield url
    else:
        with postgres_database() as url:
            yield url


# -- service fixtures: PostgreSQL databases, Celery queues and worker processes, the sim server --
import json  # noqa: E402
import uuid  # noqa: E402
from collections.abc import AsyncIterator, Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import redis  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker  # noqa: E402

from adapt.store.db import create_engine, session_factory  # noqa: E402
from tests.dbutil import postgres_database, sqlite_database  # noqa: E402
from tests.simserver import SimServer, start_sim_server, stop_sim_server  # noqa: E402
from tests.workers.support import BROKER_URL, Workers  # noqa: E402


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    with sqlite_database(tmp_path) as url:
        yield url


@pytest.fixture
async def pg_sessions(pg_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(pg_url)
    yield session_factory(engine)
    await engine.dispose()


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue no other test run uses; its Redis keys are deleted afterwards."""
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
    ws = Workers(pg_url, queue, tmp_path)
    yield ws
    ws.stop_all()


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., SimServer]]:
    started: list[SimServer] = []

    def start(**options: object) -> SimServer:
        sim = start_sim_server(**options)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        stop_sim_server(sim)
