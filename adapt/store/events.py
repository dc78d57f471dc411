"""The append-only event log: per-task, gap-free sequence numbers.

``append_event`` takes the next number from ``tasks.last_seq`` with an UPDATE ... RETURNING in
the caller's transaction, which locks the task row until commit (PostgreSQL) or holds the write
lock (SQLite), so concurrent writers never reuse or skip a number.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.store.models import EventRow, Task
from adapt.store.text import storable

EVENT_TYPES = ("node.created", "node.updated", "step", "llm_call", "task.finished",
               "task.resumed")


class TaskGone(LookupError):
    """The task row does not exist (or the condition on it failed)."""


async def next_seq(session: AsyncSession, task_id: str, *conditions: Any) -> int:
    stmt = (
        update(Task)
        .where(Task.id == task_id, *conditions)
        .values(last_seq=Task.last_seq + 1)
        .returning(Task.last_seq)
    )
    seq = (await session.execute(stmt)).scalar_one_or_none()
    if seq is None:
        raise TaskGone(task_id)
    return int(seq)


async def append_event(
    session: AsyncSession,
    task_id: str,
    type_: str,
    payload: dict[str, Any],
    *,
    ordinal: int | None = None,
    conditions: tuple[Any, ...] = (),
) -> int:
    """Append one event in the current transaction; returns its sequence number."""
    seq = await next_seq(session, task_id, *conditions)
    session.add(EventRow(task_id=task_id, seq=seq, type=type_, payload=storable(payload),
                         ordinal=ordinal))
    return seq
