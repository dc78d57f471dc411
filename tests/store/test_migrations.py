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
    assert pending(f"sqlite:///{tmp_path / 'empty.db'}") == ["0001", "0002", "0003", "0004", "0005", "0006"]


def test_upgrade_from_0001_keeps_rows_and_adds_the_monitor_column(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database created at 0001 (the first release) upgrades in place to the head."""
    from alembic import command
    from sqlalchemy import inspect

    from adapt.store.migrate import alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    cfg = alembic_config(url)
    command.upgrade(cfg, "0001")
    engine = create_engine(url)
    try:
        assert "monitor" not in {c["name"] for c in inspect(engine).get_columns("llm_calls")}
        command.upgrade(cfg, "head")
        assert "monitor" in {c["name"] for c in inspect(engine).get_columns("llm_calls")}
    finally:
        engine.dispose()
    assert pending(url) == []
