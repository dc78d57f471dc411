"""Cases of adapt's sinks for the sink conformance kit (``adapt.engine.sinktesting``): the
database and webhook sinks on a fresh task row (claimed by a test worker) per check, the trace
sink with its exported spans, and how to read back what each landed."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig
from adapt.engine.events import Event, NodeCreated, NodeUpdated, TaskFinished
from adapt.engine.sinktesting import SinkCase
from adapt.engine.tree import FINAL_NODE_STATUSES
from adapt.store import task_rows
from adapt.store.event_log import stored_events
from adapt.store.models import Task
from adapt.telemetry.semconv import TaskInfo
from adapt.telemetry.sink import OtelSink, Writing
from adapt.telemetry.spans import SpanRecord, TraceBuilder

OWNER = "sink-conformance"
SPEC = "sim:textcraft?capability=1"


async def claimed_task(sessions: async_sessionmaker[AsyncSession],
                       tenant: str = "default") -> tuple[str, int]:
    """A new task row whose lease ``OWNER`` holds: (task id, attempt)."""
    config = RunConfig(d_max=2)
    task_id = uuid.uuid4().hex
    async with sessions.begin() as session:
        session.add(Task(
            id=task_id, tenant=tenant, status="queued", environment="textcraft",
            environment_config={"seed": 0}, strategy=config.strategy, d_max=config.d_max,
            run_config=config.model_dump(mode="json"), executor_model=SPEC,
            planner_model=SPEC, executor_simulated=True, planner_simulated=True))
    attempt = await task_rows.claim(sessions, task_id, OWNER, 3600)
    assert attempt is not None
    return task_id, attempt


async def event_types(sessions: async_sessionmaker[AsyncSession], task_id: str) -> list[str]:
    """The types of the task's stored events, in sequence order."""
    async with sessions() as session:
        return [type_ for _, type_, _, _, _ in await stored_events(session, task_id)]


CaseFactory = Callable[[], AbstractAsyncContextManager[SinkCase]]


def db_sink_cases(sessions: async_sessionmaker[AsyncSession]) -> CaseFactory:
    """A ``DbSink`` per check, on a task of its own; it holds the task's event log."""
    from adapt.store.sink import DbSink

    @asynccontextmanager
    async def case() -> AsyncIterator[SinkCase]:
        task_id, attempt = await claimed_task(sessions)
        sink = DbSink(sessions, task_id, attempt, OWNER)

        async def stored() -> list[str]:
            return await event_types(sessions, task_id)

        yield SinkCase(sink, stored=stored)
        await sink.settle()

    return case


def webhook_keys(events: Sequence[Event]) -> list[str]:
    """The deliveries a webhook sink records for these events (both event types subscribed):
    ``node:<id>`` when a node first reaches a final status, ``finished:<ordinal>`` for the
    task's end; sorted."""
    keys: list[str] = []
    ended: set[int] = set()
    for ordinal, event in enumerate(events, start=1):
        if isinstance(event, NodeUpdated) and event.node.status in FINAL_NODE_STATUSES \
                and event.node.id not in ended:
            ended.add(event.node.id)
            keys.append(f"node:{event.node.id}")
        elif isinstance(event, TaskFinished):
            keys.append(f"finished:{ordinal}")
    return sorted(keys)


def webhook_sink_cases(sessions: async_sessionmaker[AsyncSession]) -> CaseFactory:
    """A ``WebhookSink`` per check, on a task of its own with one endpoint subscribed to
    both event types; it holds the task's recorded deliveries."""
    from adapt.service.webhooks import WebhookSink
    from adapt.store import webhooks as store

    @asynccontextmanager
    async def case() -> AsyncIterator[SinkCase]:
        task_id, _ = await claimed_task(sessions)
        async with sessions.begin() as session:
            session.add(store.new_endpoint("default", "https://hooks.example/adapt",
                                           ["node.finished", "task.finished"],
                                           task_id=task_id))
        sink = WebhookSink(sessions, task_id, await store.targets(sessions, task_id,
                                                                  "default"))

        async def stored() -> list[str]:
            async with sessions() as session:
                return sorted(d.event_key for d in await store.for_task(session, task_id))

        yield SinkCase(sink, stored=stored, expect=webhook_keys)

    return case


#: the task the trace sink's cases trace
TRACE_INFO = TaskInfo(task_id="t-kit", tenant="acme", environment="textcraft",
                      strategy="adapt", d_max=2, profile="default", executor_kind="react",
                      executor_model="m", planner_model="m")
#: the names a node's span starts with (a task node, a group)
NODE_SPANS = ("invoke_agent", "and group", "or group")


def ended_nodes(events: Sequence[Event]) -> list[int]:
    """The nodes whose final status has been emitted (their spans have ended), sorted."""
    return sorted({e.node.id for e in events if isinstance(e, NodeCreated | NodeUpdated)
                   and e.node.status in FINAL_NODE_STATUSES})


def exported_nodes(spans: Sequence[SpanRecord]) -> list[int]:
    """The nodes whose span was exported, sorted."""
    return sorted(int(s.attributes["adapt.node.id"]) for s in spans
                  if s.name.startswith(NODE_SPANS))


def otel_sink(writing: Writing | None = None) -> tuple[OtelSink, list[SpanRecord]]:
    """A trace sink and the list its spans are exported to."""
    exported: list[SpanRecord] = []
    return OtelSink(TraceBuilder(TRACE_INFO), exported.extend, writing=writing), exported
