"""The sweeper: which tasks need (re-)dispatching, the loop that dispatches them every
``ADAPT_SWEEP_SECONDS`` (started by the worker host, :mod:`adapt.service.host`), and handing
leases back (the statements are in ``adapt.store.task_rows``).

A task needs dispatching when nobody is working on it although it is not finished:

- ``running`` with an expired lease: its worker died (or stalled past its lease);
- ``queued`` and untouched for ``queued_grace`` seconds: its dispatch was lost (broker down when
  the API created it, a message dropped, the embedded server restarted);
- ``waiting`` for an approval whose deadline passed, with ``approval.on_deadline: reject``
  (the request is rejected; with ``fail`` the task ends ``failed`` instead):
  :func:`adapt.service.approvals.expire_overdue`.

Dispatching twice is harmless (``claim`` is conditional), but a flood of duplicates is not free,
so :func:`due_for_dispatch` also *marks* what it returns by touching ``updated_at``. Several
sweepers running at once therefore split the due tasks between them, and a task whose
re-dispatch is itself waiting in a backlog is dispatched again only after another
``queued_grace`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Collection
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service import approvals
from adapt.settings import Settings
from adapt.store import task_rows
from adapt.store.models import utcnow
from adapt.store.task_rows import SWEEP_LIMIT

log = logging.getLogger(__name__)

DispatchFn = Callable[[str], Awaitable[None]]
#: whether stale queued tasks should be re-dispatched now (False while the broker still holds
#: a backlog: those tasks are most likely waiting in it, and re-sending them would pile up
#: duplicates every sweep)
QueuedCheck = Callable[[], Awaitable[bool]]


async def due_for_dispatch(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    *,
    queued_grace: float,
    queued: bool = True,
    limit: int = SWEEP_LIMIT,
) -> list[str]:
    """Ids of running tasks whose lease expired before ``now`` and (unless ``queued`` is
    false) of queued tasks untouched for ``queued_grace`` seconds, oldest first, at most
    ``limit``. Marks them so that concurrent sweepers do not hand out the same task again
    within ``queued_grace`` (see :func:`adapt.store.task_rows.mark_due`)."""
    ids = await task_rows.mark_due(sessions, now, queued_grace=queued_grace, queued=queued,
                                   limit=limit)
    if ids:
        log.info("sweeper: %d task(s) due for dispatch", len(ids))
    return ids


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
    # approvals nobody answered in time: rejected (the task is queued again) or failed
    ids += [i for i in await approvals.expire_overdue(sessions) if i not in ids]
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


async def release_leases(
    sessions: async_sessionmaker[AsyncSession], owner: str, task_ids: Collection[str]
) -> list[str]:
    """Expire the leases ``owner`` holds on ``task_ids`` now (after cancelling its attempts on
    a clean shutdown), so any worker may resume them at once instead of after the lease.
    Returns the ids whose lease was released."""
    released = await task_rows.release_leases(sessions, owner, task_ids)
    if released:
        log.info("released %d lease(s) held by %s", len(released), owner)
    return released


def owner_is_dead(owner: str, me: str, host: str) -> bool:
    """Whether the lease owner ``<host>:<pid>:<suffix>`` (see ``default_worker_id``) is a
    process of this host that no longer runs (its pid is gone). Unknown: not dead."""
    owner_host, _, rest = owner.partition(":")
    pid_text, _, _ = rest.partition(":")
    if owner_host != host or owner == me:
        return False
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # another runner of this very process (or a reused pid): not provably dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False
    return False


async def reclaim_dead_leases(sessions: async_sessionmaker[AsyncSession], me: str) -> list[str]:
    """Expire, now, the leases held by dead processes of this host (e.g. this embedded server
    before a crash), so their tasks resume at once instead of after the lease expiry."""
    host = socket.gethostname()
    dead: dict[str, list[str]] = {}
    for task_id, owner in await task_rows.leases_on_host(sessions, host):
        if owner_is_dead(owner, me, host):
            dead.setdefault(owner, []).append(task_id)
    reclaimed: list[str] = []
    for owner, ids in dead.items():
        reclaimed += await release_leases(sessions, owner, ids)
    if reclaimed:
        log.info("took back %d lease(s) of dead processes on %s", len(reclaimed), host)
    return reclaimed
