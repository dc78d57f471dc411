"""The store tests' shared fixture: a session factory on a fresh, migrated database (SQLite and
the real PostgreSQL, through ``database_url``). The database client is imported when a test
uses it (``tests/test_test_imports.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[Any]:
    from adapt.store.db import create_engine, session_factory

    engine = create_engine(database_url)
    yield session_factory(engine)
    await engine.dispose()
