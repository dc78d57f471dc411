"""Embedded mode: tasks run in-process on the current event loop (``adapt serve``, no broker).

A thin driver of the worker host (:mod:`adapt.service.host`), which gives it the same lease
semantics as Celery workers: every run goes through ``execute_task`` (claim, heartbeat, resume
by replay), and a sweeper re-dispatches tasks whose lease expired or whose dispatch was lost.
The queue lives in this process, so on start the host dispatches every queued task and every
running task whose lease expired (a restarted server resumes its unfinished work), and on
close it hands the leases back without re-dispatching (the next start resumes them).
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from adapt.service.context import ServiceContext
from adapt.service.gc_tuning import tune_gc
from adapt.service.host import WorkerHost
from adapt.settings import Settings

log = logging.getLogger(__name__)


class EmbeddedRunner:
    """A :class:`~adapt.service.dispatch.Dispatcher` that runs tasks on the current loop, at
    most ``settings.concurrency`` at once."""

    def __init__(self, settings: Settings, *, engine: AsyncEngine | None = None) -> None:
        tune_gc()
        self.settings = settings
        self.host = WorkerHost(settings, dispatch=self.dispatch, durable_queue=False,
                               concurrency=settings.concurrency, engine=engine)

    @property
    def ctx(self) -> ServiceContext:
        return self.host.ctx

    @property
    def started(self) -> bool:
        return self.host.started and not self.host.closing

    @property
    def running(self) -> list[str]:
        """Ids of the tasks scheduled or running here."""
        return self.host.running

    def start_nowait(self) -> None:
        """:meth:`start` from synchronous code running on the event loop."""
        if self.host.started:
            return  # (after aclose too: a task dispatched then is left to the next start)
        ctx = self.host.start()
        log.info("embedded runner %s started (concurrency %d)", ctx.worker_id,
                 self.settings.concurrency)

    async def start(self) -> None:
        """Open the context and start the sweeper (whose first sweep dispatches every queued
        task and every running task whose lease expired). Idempotent."""
        self.start_nowait()

    async def dispatch(self, task_id: str) -> None:
        if not self.started:
            await self.start()
        self.host.spawn(task_id)  # nothing if it is already waiting or running here

    async def ready(self) -> bool:
        """True while started (a runner made off the loop starts here, on first use)."""
        if not self.host.started and not self.host.closing:
            self.start_nowait()
        return self.started

    async def wait(self, task_id: str) -> str | None:
        """Wait for ``task_id``'s run here (None if it is not running here)."""
        return await self.host.wait(task_id)

    async def aclose(self) -> None:
        """Drain every task (calls in flight are answered and recorded, within
        ``drain_seconds``; their leases are handed back, so the next start, or another
        server, resumes them), then close the context."""
        if self.host.closing:
            return
        interrupted = self.host.running
        await self.host.aclose()
        if self.host.started:
            log.info("embedded runner %s stopped (%d task(s) interrupted)",
                     self.host.ctx.worker_id, len(interrupted))
