"""Reads and counters of trace export (``adapt.telemetry``): the event log's times for a resumed
attempt, a finished task's whole history for ``adapt export otlp``, a call's prompt, and the
fleet-wide counters ``/metrics`` reports (spans dropped by any worker).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Float, case, cast, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.tree import FINAL_STATUSES
from adapt.store.elided import SAME_MODEL
from adapt.store.event_log import StoredEvent, read_events
from adapt.store.models import Counter, EventRow, LLMCallRow, Task
from adapt.store.prompts import StoredPrompt, call_prompts
from adapt.store.queries import in_scope
from adapt.store.responses import full_response

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
            select(EventRow.type, EventRow.ordinal, EventRow.created_at, EventRow.span)
            .where(EventRow.task_id == task_id).order_by(EventRow.seq))).all()
    times: dict[int, datetime] = {}
    aborts: list[tuple[int, datetime]] = []
    engine = 0
    for type_, ordinal, created, span in rows:
        if ordinal is not None:  # a row of several events holds consecutive ordinals
            for k in range(int(span or 1)):
                times[int(ordinal) + k] = created
            engine = max(engine, int(ordinal) + int(span or 1) - 1)
        elif type_ == "task.finished":
            aborts.append((engine, created))
    return EventTimes(times, aborts)


@dataclass
class TaskHistory:
    """Everything a finished task's trace is rebuilt from."""

    task: Task
    events: Sequence[StoredEvent]  # in sequence order, whole
    calls: dict[int, LLMCallRow]  # by call id
    #: what each call sent (read through ``adapt.store.prompts``), by call id
    prompts: dict[int, StoredPrompt] = field(default_factory=dict)


async def task_history(sessions: async_sessionmaker[AsyncSession],
                       task_id: str) -> TaskHistory | None:
    async with sessions() as session:
        task = await session.get(Task, task_id)
        if task is None:
            return None
        events = await read_events(session, task_id, 0, None)
        calls = (await session.execute(
            select(LLMCallRow).where(LLMCallRow.task_id == task_id))).scalars().all()
        prompts = await call_prompts(session, task_id)
        return TaskHistory(task, events, {c.id: c for c in calls}, prompts)


def call_prompt(history: TaskHistory, call_id: int
                ) -> tuple[str | None, list[dict[str, str]] | None]:
    """A stored call's prompt and chat messages (None when prompts were not stored)."""
    stored = history.prompts.get(call_id)
    return (None, None) if stored is None else (stored.prompt, stored.messages)


def call_response(row: LLMCallRow) -> dict[str, Any]:
    """A stored call's whole response (``ChatResponse`` JSON)."""
    return full_response(dict(row.response or {}), {
        "completion": row.completion, "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens, "usage_estimated": row.usage_estimated,
        "latency_s": row.latency_s, "model": row.model, "simulated": row.simulated,
        "retries": row.retries})


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


# -- the GenAI client metrics (/metrics, next to adapt's own) ----------------------------------
#: the conventions' explicit bucket boundaries (gen_ai.client.token.usage, .operation.duration)
TOKEN_BUCKETS: tuple[float, ...] = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144,
                                    1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS: tuple[float, ...] = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56,
                                       5.12, 10.24, 20.48, 40.96, 81.92)


@dataclass
class GenAIHistograms:
    """Per (operation, model): call count, and per histogram (sum, cumulative bucket counts)."""

    operation: str
    model: str
    count: int
    input_tokens: tuple[float, list[int]]
    output_tokens: tuple[float, list[int]]
    duration: tuple[float, list[int]]


def _le(column: Any, bounds: Sequence[float]) -> list[Any]:
    return [func.coalesce(func.sum(case((column <= b, 1), else_=0)), 0) for b in bounds]


async def genai_histograms(session: AsyncSession,
                           scope: Any | None = None) -> list[GenAIHistograms]:
    """Every recorded call (all tenants; ``scope``: of the tasks that condition on ``Task``
    selects), grouped by operation (``chat`` when the call sent chat messages, else
    ``text_completion``) and requested model: one statement."""
    operation = case((LLMCallRow.chat.is_(True), "chat"), else_="text_completion")
    # the model asked for (gen_ai.request.model): stored '' when it is the model that answered;
    # rows from before 0012 know the response's only
    model = func.coalesce(func.nullif(LLMCallRow.request_model, SAME_MODEL), LLMCallRow.model)
    latency = cast(LLMCallRow.latency_s, Float)
    n_tok, n_dur = len(TOKEN_BUCKETS), len(DURATION_BUCKETS)
    rows = (await session.execute(
        select(operation, model, func.count(),
               func.coalesce(func.sum(LLMCallRow.prompt_tokens), 0),
               func.coalesce(func.sum(LLMCallRow.completion_tokens), 0),
               func.coalesce(func.sum(latency), 0.0),
               *_le(LLMCallRow.prompt_tokens, TOKEN_BUCKETS),
               *_le(LLMCallRow.completion_tokens, TOKEN_BUCKETS),
               *_le(latency, DURATION_BUCKETS))
        .where(in_scope(LLMCallRow.task_id, scope))
        .group_by(operation, model))).all()
    out: list[GenAIHistograms] = []
    for row in rows:
        counts = [int(v) for v in row[6:]]
        out.append(GenAIHistograms(
            operation=str(row[0]), model=str(row[1]), count=int(row[2]),
            input_tokens=(float(row[3]), counts[:n_tok]),
            output_tokens=(float(row[4]), counts[n_tok:2 * n_tok]),
            duration=(float(row[5]), counts[2 * n_tok:2 * n_tok + n_dur])))
    return out
