"""Shared fixtures. No test may reach a real LLM provider: the guard is locked off here."""

from __future__ import annotations

import os

os.environ["ADAPT_ALLOW_REMOTE_LLM"] = "0"

try:
    from adapt.llm import guard as _guard
except ImportError:  # pragma: no cover - during bootstrap
    _guard = None  # type: ignore[assignment]
if _guard is not None and hasattr(_guard, "forbid_remote"):
    _guard.forbid_remote()


import pytest


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
