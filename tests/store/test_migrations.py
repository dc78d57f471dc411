"""Alembic owns the schema: migrations apply on SQLite and PostgreSQL, with no drift."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine

from adapt.store.migrate import _sync_url, pending
from adapt.store.models import Base


def test_migrations_match_the_models(database_url: str) -> None:
    assert pending(database_url) == []
    engine = create_engine(_sync_url(database_url))
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diffs = compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()
    assert diffs == [], f"models and migrations drifted: {diffs}"


def test_pending_on_an_empty_database(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert pending(f"sqlite:///{tmp_path / 'empty.db'}") == ["0001"]
