"""Celery tasks: thin. Take an id, hand it to the library on this process's loop, return.

A task never waits on another Celery task; it waits only on its own coroutine, which runs on
the process's shared event loop (see :mod:`workers.loop`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery.backends.base import DisabledBackend  # type: ignore[import-untyped]

from workers.loop import WorkerRuntime

log = logging.getLogger(__name__)


def make_run_task(runtime: Callable[[], WorkerRuntime]) -> Callable[[str], str | None]:
    def run_task(task_id: str) -> str | None:
        """Run (or resume) persisted task ``task_id``; returns its final status, or None when
        another worker owns it, it is already finished, or a shutdown interrupted it."""
        status = runtime().run(task_id)
        log.debug("task %s -> %s", task_id, status)
        return status

    return run_task


def register(app: Any, name: str, runtime: Callable[[], WorkerRuntime]) -> Any:
    """Register ``run_task`` on ``app`` as ``name``: acknowledged after it ran, rejected (so
    redelivered) if the worker is lost, no result stored.

    The task carries its (disabled) result backend itself. Celery's tracer reads
    ``task.backend`` on every run, which otherwise resolves ``app.backend`` once per thread,
    and the threads pool starts a new thread for each concurrent task: each resolution scans
    every installed package's entry points (``importlib.metadata``), about 13 % of a worker's
    CPU while 200 tasks start. A disabled backend keeps no per-thread state, so one is shared."""
    return app.task(name=name, acks_late=True, reject_on_worker_lost=True,
                    ignore_result=True, backend=DisabledBackend(app))(make_run_task(runtime))
