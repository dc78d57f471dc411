"""Deleting finished tasks: one task (``DELETE /tasks/{id}``), a tenant's or everyone's that
finished before a date (``adapt tasks purge``), and the retention loop every worker host runs
when ``ADAPT_RETENTION_DAYS`` is set (:mod:`adapt.service.host`).

Only finished tasks are deleted: a queued or running one is cancelled first (``POST
/tasks/{id}/cancel``), so a deletion never races a worker's writes. Deleting a task deletes its
rows (the database's cascades: nodes, steps, calls, events, webhook deliveries and its own
webhook endpoint) and the prompt blocks no other call's chain holds (blocks are shared between
tasks: :mod:`adapt.store.prompts`). Many tasks go in small batches, one short transaction each
with a pause between them, so the writes of running tasks (and on SQLite, every other write)
wait for at most one batch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store import prompts, task_rows
from adapt.store.models import utcnow

log = logging.getLogger(__name__)

#: tasks deleted in one transaction
BATCH = 20
#: seconds between two batches
PAUSE = 0.05
#: seconds between two rounds of the retention loop
RETENTION_INTERVAL = 600.0
#: tries of the prompt blocks' collection that a concurrent write refused
COLLECT_TRIES = 3


@dataclass
class Deleted:
    """What a deletion removed: the tasks' ids and how many prompt blocks went with them, in
    how many batches."""

    tasks: list[str] = field(default_factory=list)
    blocks: int = 0
    batches: int = 0

    def add(self, other: Deleted) -> None:
        self.tasks += other.tasks
        self.blocks += other.blocks
        self.batches += other.batches


async def delete_tasks(session: AsyncSession, task_ids: Sequence[str], *,
                       tenant: str | None = None) -> Deleted:
    """Delete those of ``task_ids`` (of ``tenant``, if given) that are finished, with the
    prompt blocks only they used, in one transaction of ``session`` (committed)."""
    candidates = await prompts.chain_blocks(session, task_ids)
    # the reads end here: on SQLite the deletion's transaction then starts with a write (a
    # read transaction that later writes fails if another write came in between)
    await session.commit()
    deleted = await task_rows.delete_finished(session, task_ids, tenant=tenant)
    blocks = await _collect(session, candidates) if deleted else []
    await session.commit()
    if blocks:
        prompts.forget_blocks(session.get_bind(), blocks)
    return Deleted(deleted, len(blocks), 1)


async def _collect(session: AsyncSession, candidates: Sequence[str]) -> list[str]:
    if session.get_bind().dialect.name != "postgresql":
        # SQLite writes one transaction at a time: no call can be written meanwhile
        return await prompts.collect_blocks(session, candidates)
    for attempt in range(1, COLLECT_TRIES + 1):
        try:
            async with session.begin_nested():
                return await prompts.collect_blocks(session, candidates)
        except IntegrityError:
            # a call written meanwhile points at a candidate: the next statement sees it
            log.info("prompt blocks: a write used a block being deleted (try %d of %d)",
                     attempt, COLLECT_TRIES)
    return []  # left for a later deletion; nothing is lost but space


async def purge(sessions: async_sessionmaker[AsyncSession], *, tenant: str | None = None,
                before: datetime | None = None, batch: int = BATCH,
                pause: float = PAUSE) -> Deleted:
    """Delete every finished task (of ``tenant``, if given; that finished before ``before``,
    if given), ``batch`` tasks per transaction, the oldest first."""
    total = Deleted()
    while True:
        async with sessions() as session:
            ids = await task_rows.finished_before(session, before, tenant=tenant, limit=batch)
            if not ids:
                break
            done = await delete_tasks(session, ids, tenant=tenant)
        total.add(done)
        if len(ids) < batch or not done.tasks:
            break
        await asyncio.sleep(pause)
    if total.tasks:
        log.info("deleted %d finished task(s) and %d prompt block(s) in %d batch(es)",
                 len(total.tasks), total.blocks, total.batches)
    return total


async def active_count(sessions: async_sessionmaker[AsyncSession], tenant: str) -> int:
    """The tenant's queued and running tasks (what a purge leaves)."""
    async with sessions() as session:
        return await task_rows.active_count(session, tenant)


async def retention_forever(sessions: async_sessionmaker[AsyncSession], days: float, *,
                            interval: float = RETENTION_INTERVAL, batch: int = BATCH) -> None:
    """Every ``interval`` seconds, delete the tasks that finished more than ``days`` days ago,
    until cancelled. Errors are logged and retried on the next round."""
    while True:
        try:
            await purge(sessions, before=utcnow() - timedelta(days=days), batch=batch)
        except Exception:
            log.warning("retention: deleting old tasks failed; retrying in %.3gs", interval,
                        exc_info=True)
        await asyncio.sleep(interval)
