"""The webhook sink runs the sink conformance kit (SQLite and PostgreSQL): after every flush,
one delivery per node that ended and one for the task's end are recorded, once each."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.sinktesting import CHECKS, check_sink
from adapt.store.db import create_engine, session_factory
from tests.sinkcases import webhook_sink_cases


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url)
    yield session_factory(engine)
    await engine.dispose()


async def test_the_webhook_sink_conforms(sessions: async_sessionmaker[AsyncSession]) -> None:
    report = await check_sink(webhook_sink_cases(sessions), name="WebhookSink")
    assert report.passed == list(CHECKS)
