"""The worker host: the one lifecycle of every process that runs tasks, whatever feeds it.

A driver in ``workers/`` only says how task ids arrive and on which event loop: the embedded
runner (``adapt serve`` without a broker) spawns a task on the server's loop for each id it is
handed; a Celery worker process hands each message from a pool thread to its loop. Either way
the host

1. starts the process's :class:`~adapt.service.context.ServiceContext` (database, model
   clients, webhook sender), its heartbeat, its sweeper and, with ``ADAPT_RETENTION_DAYS``,
   the deletion of old finished tasks (:mod:`adapt.service.retention`);
2. runs each task through :func:`~adapt.service.execute.execute_task`, keeping it in the
   context's one in-flight registry (``ctx.running``: one slot per task id, so a duplicate
   dispatch to this process returns at once);
3. on shutdown, stops the sweeper, drains the tasks in flight (the LLM calls under way are
   answered and recorded within ``ADAPT_DRAIN_SECONDS``), hands their leases back and, when
   its queue outlives the process (a broker), dispatches them again so another worker resumes
   them at once; then closes the context.

With a queue that lives in the process (embedded), a start also takes back the leases of this
host's dead processes and dispatches every queued task at once (an in-process dispatch does
not survive a restart), and a stop hands nothing back: the next start, or another server,
resumes those tasks.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncEngine

from adapt.service.context import Running, ServiceContext
from adapt.service.execute import drain, execute_task
from adapt.service.retention import retention_forever
from adapt.service.sweeper import (
    DispatchFn,
    QueuedCheck,
    queued_grace,
    reclaim_dead_leases,
    release_leases,
    sweep_forever,
)
from adapt.settings import Settings

log = logging.getLogger(__name__)

#: seconds a hand-back may take per task before the sweeper is left to dispatch it
HAND_BACK_TIMEOUT = 5.0


class WorkerHost:
    """One process's worker side. ``dispatch`` sends a task id to some worker (the sweeper
    uses it; without it no sweeper runs); ``durable_queue`` says whether what ``dispatch``
    sends outlives this process (a broker: True; the embedded runner: False);
    ``include_queued`` may hold the sweeper back from stale queued tasks (see
    :data:`~adapt.service.sweeper.QueuedCheck`); ``concurrency`` bounds the tasks
    :meth:`spawn` runs at once. ``engine``: a database engine to share (not disposed on
    close)."""

    def __init__(
        self, settings: Settings, *, dispatch: DispatchFn | None = None,
        durable_queue: bool = True, include_queued: QueuedCheck | None = None,
        concurrency: int | None = None, engine: AsyncEngine | None = None,
    ) -> None:
        self.settings = settings
        self.durable_queue = durable_queue
        self._dispatch = dispatch
        self._include_queued = include_queued
        self._concurrency = concurrency
        self._engine = engine
        self._ctx: ServiceContext | None = None
        self._limit: asyncio.Semaphore | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._retention: asyncio.Task[None] | None = None
        #: set when a shutdown begins (from any thread): a task that arrives now is left to
        #: another worker
        self.closing = False
        self._stopped = False

    @property
    def ctx(self) -> ServiceContext:
        if self._ctx is None:
            raise RuntimeError("the worker host is not started")
        return self._ctx

    @property
    def started(self) -> bool:
        return self._ctx is not None

    @property
    def sweeper(self) -> asyncio.Task[None] | None:
        return self._sweeper

    # -- start ------------------------------------------------------------------------------
    def start(self) -> ServiceContext:
        """Open the context, start the heartbeat and the sweeper (on the running loop).
        Idempotent."""
        if self._ctx is not None:
            return self._ctx
        if self.closing:
            raise RuntimeError("the worker host is closed")
        ctx = self._ctx = ServiceContext.create(self.settings, engine=self._engine)
        ctx.ensure_heartbeat()  # the process is a live worker from now on (see /readyz)
        if self._concurrency is not None:
            self._limit = asyncio.Semaphore(self._concurrency)
        if self._dispatch is not None:
            self._sweeper = asyncio.create_task(self._sweep(self._dispatch),
                                                name="adapt-sweeper")
        if self.settings.retention_days is not None:
            self._retention = asyncio.create_task(
                retention_forever(ctx.sessions, self.settings.retention_days),
                name="adapt-retention")
        return ctx

    async def _sweep(self, dispatch: DispatchFn) -> None:
        ctx = self.ctx
        first_grace = None
        if not self.durable_queue:
            try:  # leases of this host's dead processes (e.g. a crash of this server)
                await reclaim_dead_leases(ctx.sessions, ctx.worker_id)
            except Exception:
                log.warning("could not take back dead leases; they expire on their own",
                            exc_info=True)
            first_grace = 0.0  # what was queued before a restart was dispatched to no one
        await sweep_forever(ctx.sessions, dispatch, interval=self.settings.sweep_seconds,
                            grace=queued_grace(self.settings), first_grace=first_grace,
                            include_queued=self._include_queued)

    # -- tasks ------------------------------------------------------------------------------
    @property
    def running(self) -> list[str]:
        """Ids of the tasks waiting or running here."""
        return list(self._ctx.running) if self._ctx is not None else []

    async def run(self, task_id: str) -> str | None:
        """Run ``task_id`` in the calling asyncio task; its final status, or None when it was
        not claimable here, ran here already, or arrived during a shutdown."""
        if self.closing:  # leave it to another worker
            if self._dispatch is not None and self.durable_queue:
                await self._dispatch(task_id)
            return None
        return await execute_task(self.ctx, task_id)

    def spawn(self, task_id: str) -> None:
        """Run ``task_id`` in an asyncio task of its own (at most ``concurrency`` at once);
        nothing when it is waiting or running here already."""
        ctx = self.ctx
        if task_id in ctx.running:
            return
        task = asyncio.create_task(self._spawned(task_id), name=f"adapt-task-{task_id}")
        slot = ctx.running[task_id] = Running(task)

        def forget(_: asyncio.Task[str | None]) -> None:
            if ctx.running.get(task_id) is slot:
                del ctx.running[task_id]

        task.add_done_callback(forget)

    async def _spawned(self, task_id: str) -> str | None:
        try:
            if self._limit is None:
                return await self.run(task_id)
            async with self._limit:
                return await self.run(task_id)
        except Exception:  # e.g. the database is down: the sweeper tries again later
            log.exception("task %s: run failed", task_id)
            return None

    async def wait(self, task_id: str) -> str | None:
        """Wait for ``task_id``'s run here (None if it is not running here)."""
        slot = self._ctx.running.get(task_id) if self._ctx is not None else None
        return None if slot is None else await asyncio.shield(slot.task)

    # -- shutdown ---------------------------------------------------------------------------
    async def stop(self) -> list[str]:
        """Stop the sweeper and every task in flight (LLM calls in flight get
        ``drain_seconds`` to be answered and recorded; no new call starts), hand their leases
        back and, with a durable queue, dispatch them again. Returns the ids whose lease was
        handed back."""
        self.closing = True
        if self._ctx is None or self._stopped:
            return []
        self._stopped = True
        ctx = self._ctx
        for periodic in (self._sweeper, self._retention):
            if periodic is not None:
                periodic.cancel()
        slots = dict(ctx.running)
        await drain(ctx, [slot.task for slot in slots.values()], self.settings.drain_seconds)
        await asyncio.gather(*(p for p in (self._sweeper, self._retention) if p is not None),
                             return_exceptions=True)
        if not slots:
            return []
        log.info("interrupted %d task(s) for shutdown", len(slots))
        try:
            released = await release_leases(ctx.sessions, ctx.worker_id, list(slots))
        except Exception:
            log.warning("could not hand leases back; they expire on their own", exc_info=True)
            return []
        if self._dispatch is not None and self.durable_queue:
            for task_id in released:
                try:
                    await asyncio.wait_for(self._dispatch(task_id), HAND_BACK_TIMEOUT)
                except Exception:  # a sweeper picks it up
                    log.warning("could not re-dispatch task %s", task_id, exc_info=True)
            log.info("handed %d task(s) back to the queue", len(released))
        return released

    async def aclose(self) -> None:
        """:meth:`stop`, then close the context (the shared engine stays open)."""
        await self.stop()
        if self._ctx is not None:
            await self._ctx.aclose(dispose_engine=self._engine is None)
