"""The sweeper loop: every ``interval`` seconds, re-dispatch tasks nobody is working on.

Runs on a worker process's event loop (Celery mode; every worker process sweeps, which is
harmless) or on the API server's loop (embedded mode). The query lives in
:mod:`adapt.service.sweeper`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service.sweeper import due_for_dispatch
from adapt.settings import Settings
from adapt.store.models import utcnow

log = logging.getLogger(__name__)

DispatchFn = Callable[[str], Awaitable[None]]
#: whether stale queued tasks should be re-dispatched now (False while the broker still holds
#: a backlog: those tasks are most likely waiting in it, and re-sending them would pile up
#: duplicates every sweep)
QueuedCheck = Callable[[], Awaitable[bool]]


def queued_grace(settings: Settings) -> float:
    """How long a queued task may wait untouched before its dispatch counts as lost."""
    return 2 * settings.sweep_seconds


async def sweep_once(
    sessions: async_sessionmaker[AsyncSession], dispatch: DispatchFn, *, grace: float,
    include_queued: QueuedCheck | None = None,
) -> list[str]:
    """Dispatch every task due now; returns their ids."""
    queued = True if include_queued is None else await include_queued()
    ids = await due_for_dispatch(sessions, utcnow(), queued_grace=grace, queued=queued)
    for task_id in ids:
        try:
            await dispatch(task_id)
        except Exception:  # the next sweep after ``grace`` tries again
            log.warning("sweeper: dispatching task %s failed", task_id, exc_info=True)
    return ids


async def sweep_forever(
    sessions: async_sessionmaker[AsyncSession],
    dispatch: DispatchFn,
    *,
    interval: float,
    grace: float,
    first_grace: float | None = None,
    include_queued: QueuedCheck | None = None,
) -> None:
    """Sweep now (with ``first_grace`` if given), then every ``interval`` seconds, until
    cancelled. Database and broker errors are logged and retried on the next round."""
    current = grace if first_grace is None else first_grace
    while True:
        try:
            await sweep_once(sessions, dispatch, grace=current, include_queued=include_queued)
        except Exception:
            log.warning("sweeper: sweep failed; retrying in %.3gs", interval, exc_info=True)
        current = grace
        await asyncio.sleep(interval)
