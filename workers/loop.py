"""One long-lived event loop per worker process, shared by every task the process runs.

Celery's ``threads`` pool runs each task in a thread; the thread hands ``execute_task`` to this
process's loop (:func:`submit`) and waits for the result. So hundreds of tasks share one event
loop, one database engine and one HTTP connection pool (:class:`ServiceContext`), instead of
one ``asyncio.run`` (and fresh connections) per task.

The runtime is created per process, after any fork: :func:`get_runtime` recreates it when the
pid changed (threads and event loops do not survive ``fork``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from adapt.service.execute import ServiceContext, drain, execute_task
from adapt.service.gc_tuning import tune_gc
from adapt.service.sweeper import release_leases
from adapt.service.warmup import preload
from adapt.settings import Settings
from workers.sweeper import DispatchFn, QueuedCheck, queued_grace, sweep_forever

log = logging.getLogger(__name__)

T = TypeVar("T")

#: seconds a clean shutdown waits for cancelled tasks, lease release and closing connections
SHUTDOWN_TIMEOUT = 10.0


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it is installed (``uvicorn[standard]`` brings it; its sockets
    and scheduling cost a fraction of asyncio's pure-Python ones), else asyncio's."""
    try:
        import uvloop
    except ImportError:  # e.g. Windows, where uvloop does not install
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class LoopThread:
    """An asyncio event loop running forever in a daemon thread."""

    def __init__(self, name: str = "adapt-loop") -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def submit(
        self, coro_factory: Callable[[], Coroutine[Any, Any, T]]
    ) -> concurrent.futures.Future[T]:
        """Run ``coro_factory()`` on the loop (the coroutine is created there)."""

        async def call() -> T:
            return await coro_factory()

        return asyncio.run_coroutine_threadsafe(call(), self.loop)

    def stop(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Stop the loop (pending tasks are cancelled) and join the thread."""
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed in between
            return
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


class WorkerRuntime:
    """A process's loop thread, its :class:`ServiceContext`, the sweeper and the tasks in
    flight. ``redispatch`` sends a task id back to the broker (used by the sweeper and on
    shutdown); without it the sweeper does not run."""

    def __init__(
        self, settings: Settings, *, redispatch: DispatchFn | None = None,
        include_queued: QueuedCheck | None = None,
    ) -> None:
        self.settings = settings
        self.pid = os.getpid()
        self._redispatch = redispatch
        self._include_queued = include_queued
        self._thread = LoopThread(f"adapt-loop-{self.pid}")
        self._inflight: dict[asyncio.Task[Any], str] = {}
        self._closing = False
        self._interrupted: concurrent.futures.Future[list[str]] | None = None
        self._lock = threading.RLock()  # interrupt() may re-enter from a signal handler
        self._sweeper: asyncio.Task[None] | None = None
        self.ctx: ServiceContext = self._thread.submit(self._setup).result(SHUTDOWN_TIMEOUT)
        log.info("worker runtime %s started (pid %d)", self.ctx.worker_id, self.pid)

    async def _setup(self) -> ServiceContext:
        ctx = ServiceContext.create(self.settings)
        ctx.ensure_heartbeat()  # the process is a live worker from now on (see /readyz)
        if self._redispatch is not None:
            self._sweeper = asyncio.create_task(sweep_forever(
                ctx.sessions, self._redispatch, interval=self.settings.sweep_seconds,
                grace=queued_grace(self.settings), include_queued=self._include_queued),
                name="adapt-sweeper")
        return ctx

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._thread.loop

    def submit(
        self, coro_factory: Callable[[], Coroutine[Any, Any, T]]
    ) -> concurrent.futures.Future[T]:
        return self._thread.submit(coro_factory)

    # -- tasks ----------------------------------------------------------------------------
    def run(self, task_id: str) -> str | None:
        """Run ``task_id`` on the loop and wait (from a pool thread). Returns its final status,
        or None when it was not claimable or was interrupted by a shutdown."""
        future = self.submit(lambda: self._execute(task_id))
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            log.info("task %s: interrupted by shutdown; it resumes on another worker", task_id)
            return None

    async def _execute(self, task_id: str) -> str | None:
        if self._closing:  # arrived during shutdown: leave it to another worker
            if self._redispatch is not None:
                await self._redispatch(task_id)
            return None
        me = asyncio.current_task()
        if me is None:
            raise RuntimeError("run() must be awaited inside an asyncio task")
        self._inflight[me] = task_id
        try:
            return await execute_task(self.ctx, task_id)
        finally:
            self._inflight.pop(me, None)

    @property
    def inflight(self) -> list[str]:
        return list(self._inflight.values())

    # -- shutdown -------------------------------------------------------------------------
    def interrupt(self) -> concurrent.futures.Future[list[str]] | None:
        """Stop every task in flight (LLM calls in flight get ``drain_seconds`` to be answered
        and recorded; no new call starts), hand their leases back and re-dispatch them so
        another worker resumes them at once. Non-blocking (safe in a signal handler)."""
        with self._lock:
            if self._interrupted is None and self._thread.alive:
                self._closing = True
                try:
                    self._interrupted = self.submit(self._interrupt)
                except RuntimeError:  # loop already closed
                    return None
            return self._interrupted

    async def _interrupt(self) -> list[str]:
        if self._sweeper is not None:
            self._sweeper.cancel()
        tasks = dict(self._inflight)
        await drain(self.ctx, list(tasks), self.settings.drain_seconds)
        if not tasks:
            return []
        log.info("interrupted %d task(s) for shutdown", len(tasks))
        released = await release_leases(self.ctx.sessions, self.ctx.worker_id,
                                        set(tasks.values()))
        if self._redispatch is not None:
            for task_id in released:
                try:
                    await asyncio.wait_for(self._redispatch(task_id), 5)
                except Exception:  # a sweeper picks it up
                    log.warning("could not re-dispatch task %s", task_id, exc_info=True)
            log.info("handed %d task(s) back to the queue", len(released))
        return released

    def close(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Interrupt what still runs, close the context on the loop, stop the loop."""
        interrupted = self.interrupt()
        try:
            if interrupted is not None:
                interrupted.result(timeout)
            if self._thread.alive:
                self.submit(self.ctx.aclose).result(timeout)
        except Exception:
            log.warning("worker runtime did not shut down cleanly", exc_info=True)
        finally:
            self._thread.stop(timeout)
        log.info("worker runtime %s stopped", self.ctx.worker_id)


# -- the process's runtime ---------------------------------------------------------------
_runtime: WorkerRuntime | None = None
_runtime_lock = threading.Lock()


def get_runtime(
    settings: Settings | None = None, *, redispatch: DispatchFn | None = None,
    include_queued: QueuedCheck | None = None,
) -> WorkerRuntime:
    """This process's runtime, created on first use (and again in a forked child)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None or _runtime.pid != os.getpid():
            preload()  # before the freeze, so what it builds is frozen too
            tune_gc()
            _runtime = WorkerRuntime(settings or Settings(), redispatch=redispatch,
                                     include_queued=include_queued)
        return _runtime


def current_runtime() -> WorkerRuntime | None:
    """This process's runtime if it was started (never creates one)."""
    rt = _runtime
    return rt if rt is not None and rt.pid == os.getpid() else None


def submit(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
    """Run a coroutine on this process's loop (creating the runtime from the environment's
    settings if needed)."""
    return get_runtime().submit(coro_factory)


def shutdown_runtime(timeout: float = SHUTDOWN_TIMEOUT) -> None:
    """Close this process's runtime, if any."""
    global _runtime
    with _runtime_lock:
        rt, _runtime = current_runtime(), None
    if rt is not None:
        rt.close(timeout)
