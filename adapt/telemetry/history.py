"""``adapt export otlp``: finished tasks' traces, rebuilt from the database.

The event log holds every engine event in order with the time it was recorded; the calls table
holds each call's response (finish reason, cached tokens) and, where prompts are stored, its
prompt. Fed through the same :class:`~adapt.telemetry.spans.TraceBuilder` as a live run, they
give the same spans with the same ids.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.config import ResolvedConfig
from adapt.engine.events import (
    Event,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    StepAppended,
    TaskFinished,
)
from adapt.engine.tree import LLMCall, Node, Step, TaskResult
from adapt.llm.base import ChatResponse
from adapt.store import traces
from adapt.store.event_log import StoredEvent
from adapt.store.models import Task
from adapt.telemetry.semconv import TaskInfo
from adapt.telemetry.sink import Export
from adapt.telemetry.spans import SpanRecord, TraceBuilder

log = logging.getLogger(__name__)


def ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def task_info(task: Task) -> TaskInfo:
    try:
        kind = ResolvedConfig.from_stored(task.run_config, executor_model=task.executor_model,
                                          planner_model=task.planner_model).executor.kind
    except Exception:  # an old row whose config no longer validates still exports
        kind = str((task.run_config or {}).get("executor", {}).get("kind", "react"))
    return TaskInfo(
        task_id=task.id, tenant=task.tenant, environment=task.environment,
        strategy=task.strategy, d_max=task.d_max, profile=task.profile, executor_kind=kind,
        executor_model=task.executor_model, planner_model=task.planner_model,
        goal=task.resolved_goal or task.goal)


def engine_event(row: StoredEvent, history: traces.TaskHistory, *, content: bool
                 ) -> Event | None:
    """The engine event a stored event records (None: a service event)."""
    payload = row.data
    if row.type in ("node.created", "node.updated"):
        node = Node.model_validate(payload["node"])
        return NodeCreated(node=node) if row.type == "node.created" else NodeUpdated(node=node)
    if row.type == "step":
        return StepAppended(step=Step.model_validate(payload["step"]))
    if row.type == "llm_call":
        call = LLMCall.model_validate(payload["call"])
        stored = history.calls.get(call.id)
        response = None
        if stored is not None:
            response = ChatResponse.model_validate(traces.call_response(stored))
            if content:
                prompt, messages = traces.call_prompt(history, call.id)
                call = call.model_copy(update={"prompt": prompt, "messages": messages})
        return LLMCallMade(call=call, response=response)
    if row.type == "task.finished" and row.ordinal is not None:
        return TaskFinished(result=TaskResult.model_validate(payload["result"]))
    return None


def rebuild(history: traces.TaskHistory, *, content: bool) -> list[SpanRecord]:
    """Every span of a stored task, in the order they ended."""
    builder = TraceBuilder(task_info(history.task), content=content)
    spans: list[SpanRecord] = []
    for row in history.events:
        event = engine_event(row, history, content=content)
        if event is not None:
            spans.extend(builder.feed(event, ns(row.created_at)))
        elif row.type == "task.finished":  # the service ended it (an error, a cancel)
            error = row.data.get("error") or "ended by the service"
            spans.extend(builder.abort(ns(row.created_at), str(error)))
    if not builder.finished and history.task.finished_at is not None:
        spans.extend(builder.abort(ns(history.task.finished_at),
                                   history.task.error or "ended by the service"))
    return spans


async def export_tasks(sessions: async_sessionmaker[AsyncSession], task_ids: list[str],
                       export: Export, *, content: bool) -> tuple[int, int, list[str]]:
    """Rebuild and hand over the spans of ``task_ids`` (finished ones only): returns (tasks
    exported, spans, ids skipped because missing or unfinished)."""
    done = spans = 0
    skipped: list[str] = []
    for task_id in task_ids:
        history = await traces.task_history(sessions, task_id)
        if history is None or not history.task.finished:
            skipped.append(task_id)
            continue
        records = rebuild(history, content=content)
        export(records)
        done += 1
        spans += len(records)
    return done, spans, skipped
