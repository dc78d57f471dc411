"""Fixtures for worker tests: a PostgreSQL database, a unique Celery queue, worker processes,
the simulator's HTTP server."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store.db import create_engine, session_factory
from tests.dbutil import postgres_database, sqlite_database
from tests.simserver import SimServer, start_sim_server, stop_sim_server
from tests.workers.support import BROKER_URL, Workers


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
