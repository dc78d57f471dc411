"""A worker process opens as many model connections as it runs tasks (``concurrency``), so
that every task's call can be in flight at once: the service's client pool is sized by
``Settings.model_connections``, and a Celery worker's ``--concurrency`` is its tasks."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from adapt.service.context import ServiceContext
from adapt.settings import Settings
from workers import celery_app


@pytest.mark.parametrize(("settings", "connections"), [
    ({"concurrency": 400}, 400), ({"concurrency": 400, "llm_max_connections": 8}, 8)])
async def test_the_process_pool_follows_its_concurrency(
        database_url: str, settings: dict[str, Any], connections: int) -> None:
    ctx = ServiceContext.create(Settings.model_validate(
        {"ADAPT_DATABASE_URL": database_url, **settings}))
    try:
        assert ctx.pool._limits.max_connections == connections
        assert ctx.pool._limits.max_keepalive_connections == connections
    finally:
        await ctx.aclose()


def test_a_celery_worker_runs_as_many_tasks_as_its_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``celery -A workers.celery_app worker --concurrency 500`` (no ADAPT_CONCURRENCY): the
    process's runtime, and so its pool, is built for 500 tasks."""
    built: list[Settings] = []
    monkeypatch.setattr(celery_app.loop, "get_runtime",
                        lambda settings, **_: built.append(settings))
    monkeypatch.setattr(celery_app, "_settings", Settings(concurrency=200))
    monkeypatch.setattr(celery_app, "_worker", SimpleNamespace(concurrency=500))
    celery_app.process_runtime()
    assert built[-1].concurrency == 500 and built[-1].model_connections == 500
    monkeypatch.setattr(celery_app, "_worker", None)  # not under a worker: the settings'
    celery_app.process_runtime()
    assert built[-1].concurrency == 200
