"""One long-lived event loop per worker process, shared by every task the process runs: the
Celery driver of the worker host (:mod:`adapt.service.host`).

Celery's ``threads`` pool runs each task in a thread; the thread hands the task id to the
host on this process's loop (:meth:`WorkerRuntime.run`) and waits for the result. So hundreds
of tasks share one event loop, one database engine and one HTTP connection pool
(:class:`~adapt.service.context.ServiceContext`), instead of one ``asyncio.run`` (and fresh
connections) per task.

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

from adapt.service.context import ServiceContext
from adapt.service.gc_tuning import tune_gc
from adapt.service.host import WorkerHost
from adapt.service.sweeper import DispatchFn, QueuedCheck
from adapt.service.warmup import preload
from adapt.settings import Settings

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
    """A process's loop thread and its worker host (context, heartbeat, sweeper, tasks in
    flight). ``redispatch`` sends a task id back to the broker (used by the sweeper and on
    shutdown); without it the sweeper does not run."""

    def __init__(
        self, settings: Settings, *, redispatch: DispatchFn | None = None,
        include_queued: QueuedCheck | None = None,
    ) -> None:
        self.settings = settings
        self.pid = os.getpid()
        self.host = WorkerHost(settings, dispatch=redispatch, include_queued=include_queued)
        self._thread = LoopThread(f"adapt-loop-{self.pid}")
        self._interrupted: concurrent.futures.Future[list[str]] | None = None
        self._lock = threading.RLock()  # interrupt() may re-enter from a signal handler
        self.ctx: ServiceContext = self._thread.submit(self._start).result(SHUTDOWN_TIMEOUT)
        log.info("worker runtime %s started (pid %d)", self.ctx.worker_id, self.pid)

    async def _start(self) -> ServiceContext:
        return self.host.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._thread.loop

    def submit(
        self, coro_factory: Callable[[], Coroutine[Any, Any, T]]
    ) -> concurrent.futures.Future[T]:
        return self._thread.submit(coro_factory)

    def run(self, task_id: str) -> str | None:
        """Run ``task_id`` on the loop and wait (from a pool thread). Returns its final status,
        or None when it was not claimable or was interrupted by a shutdown."""
        future = self.submit(lambda: self.host.run(task_id))
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            log.info("task %s: interrupted by shutdown; it resumes on another worker", task_id)
            return None

    @property
    def inflight(self) -> list[str]:
        return self.host.running

    def interrupt(self) -> concurrent.futures.Future[list[str]] | None:
        """Stop every task in flight and hand it back to the queue (:meth:`WorkerHost.stop`).
        Non-blocking (safe in a signal handler)."""
        with self._lock:
            if self._interrupted is None and self._thread.alive:
                self.host.closing = True  # a message that arrives from now on goes back
                try:
                    self._interrupted = self.submit(self.host.stop)
                except RuntimeError:  # loop already closed
                    return None
            return self._interrupted

    def close(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Interrupt what still runs, close the host on the loop, stop the loop."""
        interrupted = self.interrupt()
        try:
            if interrupted is not None:
                interrupted.result(timeout)
            if self._thread.alive:
                self.submit(self.host.aclose).result(timeout)
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
