"""The database sink runs the sink conformance kit (SQLite and PostgreSQL), and keeps what the
database tells the attempt in the attempt's own handle (``AttemptControl``), not in itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import Event, FanoutSink, NodeCreated
from adapt.engine.sinktesting import CHECKS, SinkCase, check_sink
from adapt.engine.tree import Node
from adapt.service.errors import LeaseLost
from adapt.store.attempt import AttemptControl
from adapt.store.models import Task
from adapt.store.sink import DbSink
from tests.sinkcases import (
    OWNER,
    claimed_task,
    db_sink_cases,
    ended_nodes,
    exported_nodes,
    otel_sink,
    webhook_sink_cases,
)


async def test_the_database_sink_conforms(sessions: async_sessionmaker[AsyncSession]) -> None:
    report = await check_sink(db_sink_cases(sessions), name="DbSink")
    assert report.passed == list(CHECKS)


async def test_the_workers_fan_out_conforms(sessions: async_sessionmaker[AsyncSession]) -> None:
    """What a worker gives the engine: webhooks, then the database, then traces that wait for
    the database's writes (``adapt.service.execute``), as one sink."""
    webhooks = webhook_sink_cases(sessions)

    @asynccontextmanager
    async def fanout() -> AsyncIterator[SinkCase]:
        async with webhooks() as hooks, db_sink_cases(sessions)() as db:
            assert isinstance(db.sink, DbSink) and hooks.stored and db.stored
            trace, exported = otel_sink(writing=db.sink.writing)
            parts = (hooks, db)

            async def stored() -> Any:
                return [await c.stored() for c in parts if c.stored], exported_nodes(exported)

            def expect(events: Sequence[Event]) -> Any:
                return [c.expect(events) for c in parts], ended_nodes(events)

            yield SinkCase(FanoutSink([hooks.sink, db.sink, trace]), stored=stored,
                           expect=expect, pending=lambda: len(trace.pending))

    assert (await check_sink(fanout, name="the worker's fan-out")).passed == list(CHECKS)


async def test_a_cancel_request_reaches_the_attempts_control_not_the_sink(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, attempt = await claimed_task(sessions)
    control = AttemptControl(task_id, attempt, OWNER)
    sink = DbSink(sessions, task_id, attempt, OWNER, control=control)
    ready = False
    cancelled = control.cancel_check(lambda: ready)
    async with sessions.begin() as session:
        await session.execute(update(Task).where(Task.id == task_id)
                              .values(cancel_requested=True))
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await sink.flush()  # the write's answer says a cancel is requested
    assert control.cancel_requested and not hasattr(sink, "cancel_requested")
    assert not cancelled()  # not before the attempt says it is ready (its replay is over)
    ready = True
    assert cancelled()


async def test_a_refused_write_marks_the_lease_lost(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, attempt = await claimed_task(sessions)
    stale = AttemptControl(task_id, attempt + 1, OWNER)  # not the attempt holding the lease
    sink = DbSink(sessions, task_id, attempt + 1, OWNER, control=stale)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    with pytest.raises(LeaseLost):
        await sink.flush()
    assert stale.lease_lost and not stale.cancel_requested


def test_a_sink_refuses_another_attempts_control() -> None:
    with pytest.raises(ValueError, match="another attempt's"):
        DbSink(None, "t", 2, OWNER, control=AttemptControl("t", 1, OWNER))  # type: ignore[arg-type]
