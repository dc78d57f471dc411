"""Reads and counters of trace export (``adapt.telemetry``): the event log's times for a resumed
attempt, a finished task's whole history for ``adapt export otlp``, a call's prompt, and the
fleet-wide counters ``/metrics`` reports (spans dropped by any worker).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.tree import FINAL_STATUSES
from adapt.store.models import Counter, EventRow, LLMCallRow, Task

#: spans a worker dropped (queue full, export failed): ``adapt_otel_spans_dropped``
SPANS_DROPPED = "otel_spans_dropped"


@dataclass
class EventTimes:
    """When each engine event was recorded (ordinal -> time), and where the service ended the
    task from outside the engine: (engine events recorded before it, its time)."""

    times: dict[int, datetime]
    aborts: list[tuple[int, datetime]]


async def event_times(sessions: async_sessionmaker[AsyncSession], task_id: str) -> EventTimes:
    async with sessions() as session:
        rows = (await session.execute(
            select(EventRow.type, EventRow.ordinal, EventRow.created_at)
            .where(EventRow.task_id == task_id).order_by(EventRow.seq))).all()
    times: dict[int, datetime] = {}
    aborts: list[tuple[int, datetime]] = []
    engine = 0
    for type_, ordinal, created in rows:
        if ordinal is not None:
            times[int(ordinal)] = created
            engine = max(engine, int(ordinal))
        elif type_ == "task.finished":
            aborts.append((engine, created))
    return EventTimes(times, aborts)


@dataclass
class TaskHistory:
    """Everything a finished task's trace is rebuilt from."""

    task: Task
    events: Sequence[EventRow]  # in sequence order
    calls: dict[int, LLMCallRow]  # by call id


async def task_history(sessions: async_sessionmaker[AsyncSession],
                       task_id: str) -> TaskHistory | None:
    async with sessions() as session:
        task = await session.get(Task, task_id)
        if task is None:
            return None
        events = (await session.execute(
            select(EventRow).where(EventRow.task_id == task_id)
            .order_by(EventRow.seq))).scalars().all()
        calls = (await session.execute(
            select(LLMCallRow).where(LLMCallRow.task_id == task_id))).scalars().all()
        return TaskHistory(task, events, {c.id: c for c in calls})


def call_prompt(row: LLMCallRow) -> tuple[str | None, list[dict[str, str]] | None]:
    """A stored call's prompt and chat messages (None when prompts were not stored). The one
    place that knows how prompts are stored."""
    return row.prompt, row.messages


def call_response(row: LLMCallRow) -> dict[str, Any]:
    """A stored call's response (``ChatResponse`` JSON)."""
    return dict(row.response or {})


async def finished_since(sessions: async_sessionmaker[AsyncSession],
                         since: datetime) -> list[str]:
    """Ids of the tasks that finished at or after ``since``, oldest first."""
    async with sessions() as session:
        rows = (await session.execute(
            select(Task.id).where(Task.status.in_(FINAL_STATUSES), Task.finished_at >= since)
            .order_by(Task.finished_at, Task.id))).scalars().all()
    return list(rows)


async def add_to_counter(sessions: async_sessionmaker[AsyncSession], name: str,
                         amount: int) -> None:
    """Add ``amount`` to the fleet-wide counter ``name`` (one atomic UPDATE, or the insert)."""
    if amount <= 0:
        return
    async with sessions.begin() as session:
        found = (await session.execute(
            update(Counter).where(Counter.name == name)
            .values(value=Counter.value + amount).returning(Counter.name))).scalar_one_or_none()
        if found is None:
            session.add(Counter(name=name, value=amount))


async def counter_values(session: AsyncSession) -> dict[str, int]:
    rows = (await session.execute(select(Counter.name, Counter.value))).all()
    return {str(name): int(value) for name, value in rows}
