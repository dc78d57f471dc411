"""Embedded mode: tasks run in-process on the current event loop (``adapt serve``, no broker).

Same lease semantics as Celery workers: every run goes through ``execute_task`` (claim, heartbeat,
resume by replay), and a sweeper re-dispatches tasks whose lease expired or whose dispatch was
lost. On start the runner dispatches every queued task (an in-process dispatch does not survive
a restart) and every running task whose lease expired, so a restarted server resumes its
unfinished work.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from adapt.service.execute import ServiceContext, drain, execute_task
from adapt.service.gc_tuning import tune_gc
from adapt.service.sweeper import reclaim_dead_leases, release_leases
from adapt.settings import Settings
from workers.sweeper import queued_grace, sweep_forever

log = logging.getLogger(__name__)


class EmbeddedRunner:
    """A :class:`~adapt.service.dispatch.Dispatcher` that runs tasks on the current loop, at
    most ``settings.concurrency`` at once."""

    def __init__(self, settings: Settings, *, engine: AsyncEngine | None = None) -> None:
        tune_gc()
        self.settings = settings
        self._engine = engine
        self._ctx: ServiceContext | None = None
        self._sem: asyncio.Semaphore | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: dict[str, asyncio.Task[str | None]] = {}
        self._closed = False

    @property
    def ctx(self) -> ServiceContext:
        if self._ctx is None:
            raise RuntimeError("EmbeddedRunner is not started")
        return self._ctx

    @property
    def started(self) -> bool:
        return self._ctx is not None and not self._closed

    @property
    def running(self) -> list[str]:
        """Ids of the tasks scheduled or running here."""
        return list(self._tasks)

    def start_nowait(self) -> None:
        """:meth:`start` from synchronous code running on the event loop."""
        if self._ctx is not None:
            return
        if self._closed:
            raise RuntimeError("EmbeddedRunner is closed")
        self._ctx = ServiceContext.create(self.settings, engine=self._engine)
        self._ctx.ensure_heartbeat()
        self._sem = asyncio.Semaphore(self.settings.concurrency)
        self._sweeper = asyncio.create_task(self._sweep(), name="adapt-embedded-sweeper")
        log.info("embedded runner %s started (concurrency %d)", self._ctx.worker_id,
                 self.settings.concurrency)

    async def _sweep(self) -> None:
        ctx = self.ctx
        try:  # leases of this host's dead processes (a crash of this server): resume now
            await reclaim_dead_leases(ctx.sessions, ctx.worker_id)
        except Exception:
            log.warning("could not take back dead leases; they expire on their own",
                        exc_info=True)
        await sweep_forever(ctx.sessions, self.dispatch, interval=self.settings.sweep_seconds,
                            grace=queued_grace(self.settings), first_grace=0.0)

    async def start(self) -> None:
        """Open the context and start the sweeper (whose first sweep dispatches every queued
        task and every running task whose lease expired). Idempotent."""
        self.start_nowait()

    async def dispatch(self, task_id: str) -> None:
        if not self.started:
            await self.start()
        if task_id in self._tasks:
            return  # already waiting or running here
        task = asyncio.create_task(self._run(task_id), name=f"adapt-task-{task_id}")
        self._tasks[task_id] = task

        def forget(done: asyncio.Task[str | None]) -> None:
            if self._tasks.get(task_id) is done:
                del self._tasks[task_id]

        task.add_done_callback(forget)

    async def _run(self, task_id: str) -> str | None:
        if self._sem is None:
            raise RuntimeError("EmbeddedRunner is not started")
        async with self._sem:
            try:
                return await execute_task(self.ctx, task_id)
            except Exception:  # e.g. the database is down: the sweeper tries again later
                log.exception("task %s: run failed", task_id)
                return None

    async def ready(self) -> bool:
        """True while started (a runner made off the loop starts here, on first use)."""
        if self._ctx is None and not self._closed:
            self.start_nowait()
        return self.started

    async def wait(self, task_id: str) -> str | None:
        """Wait for ``task_id``'s run here (None if it is not running here)."""
        task = self._tasks.get(task_id)
        return None if task is None else await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel the sweeper, drain every task (calls in flight are answered and recorded,
        within ``drain_seconds``; their leases are handed back, so the next start, or another
        server, resumes them), then close the context."""
        if self._closed:
            return
        self._closed = True
        if self._ctx is None:
            return
        if self._sweeper is not None:
            self._sweeper.cancel()
        tasks = dict(self._tasks)
        await drain(self._ctx, list(tasks.values()), self.settings.drain_seconds)
        await asyncio.gather(*([self._sweeper] if self._sweeper else []),
                             return_exceptions=True)
        try:
            if tasks:
                await release_leases(self._ctx.sessions, self._ctx.worker_id, list(tasks))
        except Exception:
            log.warning("could not release leases on close; they expire on their own",
                        exc_info=True)
        finally:
            await self._ctx.aclose(dispose_engine=self._engine is None)
        log.info("embedded runner %s stopped (%d task(s) interrupted)", self._ctx.worker_id,
                 len(tasks))
