"""Dispatchers for the API: Celery (a broker is configured) or the embedded in-process runner.

``make_dispatcher(settings, sessions)`` picks one. Both implement
:class:`adapt.service.dispatch.Dispatcher`; call ``await dispatcher.aclose()`` on shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service.dispatch import Dispatcher
from adapt.settings import Settings
from workers.embedded import EmbeddedRunner

log = logging.getLogger(__name__)

#: seconds ``CeleryDispatcher.ready`` waits for the broker
READY_TIMEOUT = 2.0


class CeleryDispatcher:
    """Publishes task ids to the broker. Publishing runs in a thread, so the caller's event
    loop is never blocked by the broker. A failed publish is logged, not raised: the task row
    stays queued and a worker's sweeper dispatches it once the broker is back."""

    def __init__(self, broker_url: str, *, queue: str | None = None,
                 ready_timeout: float = READY_TIMEOUT) -> None:
        from workers.celery_app import create_app

        self.broker_url = broker_url
        self.ready_timeout = ready_timeout
        self.app: Any = create_app(broker_url, queue=queue, name="adapt-dispatch")

    @property
    def queue(self) -> str:
        return str(self.app.conf.task_default_queue)

    async def dispatch(self, task_id: str) -> None:
        from workers.celery_app import send_run_task

        try:
            await asyncio.to_thread(send_run_task, self.app, task_id)
        except Exception:
            log.warning("could not publish task %s to %s; the sweeper dispatches it later",
                        task_id, self.queue, exc_info=True)

    def _ping(self) -> None:
        with self.app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0,
                                   timeout=self.ready_timeout)
            client = getattr(conn.default_channel, "client", None)  # redis: one round trip
            if client is not None:
                client.ping()

    async def ready(self) -> bool:
        try:
            await asyncio.wait_for(asyncio.to_thread(self._ping), self.ready_timeout + 0.5)
        except Exception as exc:
            log.debug("broker %s not ready: %s", self.broker_url, exc)
            return False
        return True

    async def aclose(self) -> None:
        await asyncio.to_thread(self.app.close)


def make_dispatcher(
    settings: Settings, sessions: async_sessionmaker[AsyncSession] | None = None
) -> Dispatcher:
    """The dispatcher ``settings`` ask for: :class:`EmbeddedRunner` without a broker (started
    right away when called on a running event loop, else on first use), otherwise
    :class:`CeleryDispatcher`.

    ``sessions`` (the API's) is accepted for the API's convenience but not used: the embedded
    runner opens its own engine so running tasks cannot starve API requests of connections.
    """
    del sessions
    if settings.embedded:
        runner = EmbeddedRunner(settings)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return runner
        runner.start_nowait()
        return runner
    if settings.broker_url is None:
        raise RuntimeError("Celery dispatch needs ADAPT_BROKER_URL")
    return CeleryDispatcher(settings.broker_url, queue=settings.celery_queue)
