"""The Celery app: a Redis broker dispatches task ids; workers run them on one event loop.

Start a worker with ``adapt worker`` (or :func:`start_worker`), which is equivalent to::

    ADAPT_BROKER_URL=redis://127.0.0.1:6379/0 celery -A workers.celery_app worker \\
        --pool threads --concurrency 200 --queues adapt --without-gossip --without-mingle

The broker only dispatches: a message carries a task id, the task row in the database is the
source of truth, and a worker runs a task only after claiming its lease. Messages are
acknowledged late and prefetched one per thread, so a message of a worker that died goes back to
the queue; independently, every worker process sweeps the database for tasks whose lease
expired or whose dispatch was lost and re-dispatches them.

Settings (``ADAPT_*``, see :mod:`adapt.settings`) are read here, at the edge. The queue name is
``adapt`` unless ``ADAPT_CELERY_QUEUE`` names another (tests use a unique one).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import Any

from celery import Celery  # type: ignore[import-untyped]
from celery.signals import (  # type: ignore[import-untyped]
    worker_init,
    worker_process_init,
    worker_shutdown,
    worker_shutting_down,
)

from adapt.errors import UserError
from adapt.service import remote_envs
from adapt.settings import Settings
from workers import loop
from workers.celery_tasks import register

log = logging.getLogger(__name__)

TASK_NAME = "adapt.run_task"
DEFAULT_QUEUE = "adapt"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
#: a publish gives up quickly when the broker is down (the sweeper dispatches later)
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2,
                 "interval_max": 0.5}


def queue_name() -> str:
    from adapt.settings import get_settings

    return get_settings().celery_queue or DEFAULT_QUEUE


def create_app(
    broker_url: str | None, *, queue: str | None = None, concurrency: int = 200,
    name: str = "adapt",
) -> Any:
    """A Celery app configured for adapt (no result backend; late acks; one message per
    thread; the ``threads`` pool). Producers (the API) and workers use the same settings."""
    celery = Celery(name, set_as_current=False)
    celery.conf.update(
        broker_url=broker_url or DEFAULT_BROKER,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=3.0,
        task_default_queue=queue or queue_name(),
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_store_errors_even_if_ignored=False,
        task_publish_retry_policy=PUBLISH_RETRY,
        result_backend=None,
        worker_prefetch_multiplier=1,
        worker_pool="threads",
        worker_concurrency=concurrency,
        worker_send_task_events=False,
        worker_hijack_root_logger=True,
    )
    return celery


def send_run_task(celery: Any, task_id: str) -> None:
    """Publish "run ``task_id``" (blocking; call it in a thread from async code)."""
    celery.send_task(TASK_NAME, args=[task_id], queue=celery.conf.task_default_queue)


def queue_depth(celery: Any) -> int:
    """Messages waiting in the app's queue (blocking)."""
    queue = celery.conf.task_default_queue
    with celery.connection_for_read() as conn:
        try:
            _, count, _ = conn.default_channel.queue_declare(queue=queue, passive=True)
        except conn.channel_errors as exc:  # NOT_FOUND: never declared, so empty
            log.debug("queue %s: %s", queue, exc)
            return 0
    return int(count)


_env = Settings()
app = create_app(_env.broker_url, concurrency=_env.concurrency)
run_task = register(app, TASK_NAME, lambda: process_runtime())
_settings: Settings | None = None
#: the worker (``WorkController``) this process started, for its exit code
_worker: Any = None


def configure(settings: Settings) -> None:
    """Use ``settings`` (instead of the environment's) for this process's worker."""
    global _settings
    _settings = settings
    app.conf.broker_url = settings.broker_url or DEFAULT_BROKER
    app.conf.worker_concurrency = settings.concurrency


async def _redispatch(task_id: str) -> None:
    await asyncio.to_thread(send_run_task, app, task_id)


async def _queue_drained() -> bool:
    """Stale queued tasks are re-sent only once the queue is empty: while it holds a backlog
    they are most likely waiting in it (re-sending would add a duplicate every sweep)."""
    try:
        return await asyncio.to_thread(queue_depth, app) == 0
    except Exception:  # unknown: re-send (duplicates are harmless)
        log.warning("could not read the depth of queue %s", app.conf.task_default_queue,
                    exc_info=True)
        return True


def process_runtime() -> loop.WorkerRuntime:
    """This worker process's runtime (event loop, context, sweeper), created on first use,
    with the settings' ``concurrency`` the worker's own (``--concurrency``: its threads)."""
    settings = _settings or Settings()
    threads = getattr(_worker, "concurrency", None)
    if isinstance(threads, int) and threads > 0 and threads != settings.concurrency:
        settings = settings.model_copy(update={"concurrency": threads})
    return loop.get_runtime(settings, redispatch=_redispatch, include_queued=_queue_drained)


# -- worker lifecycle signals ---------------------------------------------------------------
def _pool_name(worker: Any) -> str:
    pool = getattr(worker, "pool_cls", "")
    return pool if isinstance(pool, str) else f"{pool.__module__}.{pool.__qualname__}"


def _on_worker_init(sender: Any = None, **_: Any) -> None:
    global _worker
    if getattr(sender, "app", None) is not app:
        return
    _worker = sender
    for noisy in ("httpx", "httpcore"):  # one INFO line per LLM request otherwise
        logging.getLogger(noisy).setLevel(logging.WARNING)
    pool = _pool_name(sender)
    if "prefork" in pool or pool in ("processes", ""):
        return  # each child starts its runtime (worker_process_init)
    if "thread" not in pool:
        log.warning("adapt workers are meant for the threads pool (got %s)", pool)
    process_runtime()  # start the loop and the sweeper before the first message arrives


def _on_worker_process_init(**_: Any) -> None:
    process_runtime()


def _on_worker_shutting_down(**_: Any) -> None:
    # runs in the signal handler: only schedule the interruption (the pool then waits for the
    # task threads, which return as soon as their tasks are cancelled)
    rt = loop.current_runtime()
    if rt is not None:
        rt.interrupt()


def _on_worker_shutdown(sender: Any = None, **_: Any) -> None:
    if getattr(sender, "app", None) is app:
        loop.shutdown_runtime()


worker_init.connect(_on_worker_init, weak=False)
worker_process_init.connect(_on_worker_process_init, weak=False)
worker_shutting_down.connect(_on_worker_shutting_down, weak=False)
worker_shutdown.connect(_on_worker_shutdown, weak=False)


def start_worker(
    settings: Settings, concurrency: int | None = None, loglevel: str = "INFO",
    *, queue: str | None = None,
) -> int:
    """Run a Celery worker in this process until it is stopped (SIGTERM/SIGINT: LLM calls in
    flight are drained for ``drain_seconds``, then the tasks' leases are handed back and their
    ids re-dispatched). The worker rides out broker restarts (it reconnects; Celery 5.7.0 does
    not, hence the pin below 5.7). Returns the exit code: 0 after a requested stop, non-zero
    after an unrecoverable error."""
    if not settings.broker_url:
        raise UserError("no broker configured: set ADAPT_BROKER_URL "
                        "(e.g. redis://127.0.0.1:6379/0)")
    configure(settings)
    remote_envs.register(settings)  # a refused remote environment URL stops the start here
    n = concurrency or settings.concurrency
    q = queue or settings.celery_queue
    app.conf.task_default_queue = q
    argv = [
        "worker", f"--loglevel={loglevel}", "--pool=threads", f"--concurrency={n}",
        f"--queues={q}", f"--hostname=adapt-{os.getpid()}@{socket.gethostname()}",
        "--without-gossip", "--without-mingle", "--prefetch-multiplier=1",
    ]
    log.info("starting worker: queue %s, concurrency %d", q, n)
    app.start(argv)  # what `celery worker` runs
    return exit_code(_worker)


def exit_code(worker: Any) -> int:
    """The process's exit status after ``worker`` stopped: Celery records an unrecoverable
    error as the worker's ``exitcode`` (1) but ``app.start`` does not return it, which made a
    crashed worker exit 0 (and a supervisor with ``restart: on-failure`` not restart it)."""
    code = getattr(worker, "exitcode", None)
    if worker is None:
        return 1  # the worker never started (bad arguments: click printed why)
    return int(code or 0)
