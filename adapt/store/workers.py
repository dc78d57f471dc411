"""The live-worker registry: every worker process (Celery worker or embedded runner) refreshes
its row on each heartbeat; a row whose ``expires_at`` passed belongs to a dead worker.

``/readyz`` counts live workers for its queue; ``/metrics`` reports them.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store.models import WorkerRow, utcnow


async def beat(sessions: async_sessionmaker[AsyncSession], worker_id: str, *, queue: str,
               hostname: str, pid: int, running: int, ttl: float) -> None:
    """Record that ``worker_id`` is alive for another ``ttl`` seconds."""
    now = utcnow()
    values = {"queue": queue, "running": running, "heartbeat_at": now,
              "expires_at": now + timedelta(seconds=ttl)}
    async with sessions.begin() as session:
        found = (await session.execute(
            update(WorkerRow).where(WorkerRow.id == worker_id).values(**values)
            .returning(WorkerRow.id))).scalar_one_or_none()
        if found is None:
            await session.execute(insert(WorkerRow).values(
                id=worker_id, hostname=hostname, pid=pid, started_at=now, **values))


async def forget(sessions: async_sessionmaker[AsyncSession], worker_id: str) -> None:
    """Remove ``worker_id`` (a clean shutdown) and rows of workers dead for an hour."""
    async with sessions.begin() as session:
        await session.execute(delete(WorkerRow).where(WorkerRow.id == worker_id))
        await session.execute(delete(WorkerRow).where(
            WorkerRow.expires_at < utcnow() - timedelta(hours=1)))


async def live_workers(session: AsyncSession, queue: str | None = None) -> int:
    """Workers whose heartbeat has not expired (on ``queue`` if given)."""
    stmt = select(func.count()).select_from(WorkerRow).where(WorkerRow.expires_at > utcnow())
    if queue is not None:
        stmt = stmt.where(WorkerRow.queue == queue)
    return int((await session.execute(stmt)).scalar_one())
