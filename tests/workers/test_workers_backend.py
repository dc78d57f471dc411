"""The run task's result backend is resolved once, not once per pool thread (a resolution scans
every installed package's entry points; the threads pool starts a thread per concurrent task)."""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any

import pytest
from celery.backends.base import DisabledBackend

from workers.celery_app import create_app
from workers.celery_tasks import register


def test_every_pool_thread_shares_the_one_disabled_backend(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app("redis://127.0.0.1:6379/0", queue="adapt-test-backend")
    task = register(app, "adapt.test_backend", lambda: None)  # type: ignore[arg-type,return-value]
    task.backend  # noqa: B018 (resolved once here, as the worker's first task would)
    scans: list[Any] = []
    real = importlib.metadata.entry_points

    def counting(*args: Any, **kwargs: Any) -> Any:
        scans.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(task.backend)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4
    assert all(isinstance(b, DisabledBackend) for b in seen)
    assert len({id(b) for b in seen}) == 1
    assert scans == []
