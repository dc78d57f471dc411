"""The compact event log (``adapt.store.event_log``): what is stored names other rows and keeps
only what changed; what is read is every event whole, as the engine emitted it, from any
``seq``, page by page, after a resume, and for rows of the older whole format. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import Event, FanoutSink, LLMCallMade, MemorySink, TaskFinished
from adapt.store.db import create_engine, session_factory
from adapt.store.event_log import NodeStates, read_events
from adapt.store.models import EventRow, utcnow
from adapt.store.sink import DbSink
from benchmarks.perfkit import OWNER, leased_task, run_textcraft


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url)
    yield session_factory(engine)
    await engine.dispose()


def whole(event: Event) -> dict[str, Any]:
    """The payload the API shows for an engine event (what was stored before compaction)."""
    if isinstance(event, TaskFinished):
        r = event.result
        return {"status": r.status, "result": r.model_dump(mode="json"), "error": r.error}
    if isinstance(event, LLMCallMade):
        call = event.call.model_dump(mode="json")
        return {"call": {**call, "prompt": None, "messages": None}}
    return event.model_dump(mode="json", exclude={"type", "request_fingerprint", "response"})


async def stored_task(sessions: async_sessionmaker[AsyncSession], seed: int = 11
                      ) -> tuple[str, list[dict[str, Any]]]:
    """A simulated task through the real sink; (task id, every event as the API should show
    it: type and data)."""
    task_id, attempt = await leased_task(sessions, seed)
    memory = MemorySink()
    sink = DbSink(sessions, task_id, attempt, OWNER)
    await run_textcraft(seed, FanoutSink([memory, sink]))
    return task_id, [{"type": e.type, "data": whole(e)} for e in memory.events]


def shown(events: list[Any]) -> list[dict[str, Any]]:
    return [{"type": e.type, "data": json.loads(json.dumps(e.data))} for e in events]


async def test_every_event_reads_back_whole_from_any_seq(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, expected = await stored_task(sessions)
    async with sessions() as session:
        assert shown(await read_events(session, task_id, 0, None)) == expected
        for since in (1, 2, 7, len(expected) // 2, len(expected) - 1, len(expected)):
            assert shown(await read_events(session, task_id, since, None)) == expected[since:]
        # page by page, as the stream reads: the node snapshots carried from page to page
        states: NodeStates = {}
        pages: list[Any] = []
        after = 3
        while page := await read_events(session, task_id, after, 5, states=states):
            pages += page
            after = page[-1].seq
        assert shown(pages) == expected[3:]
        assert [e.seq for e in pages] == list(range(4, len(expected) + 1))


async def test_rows_far_apart_are_named_instead_of_read_by_range(
        sessions: async_sessionmaker[AsyncSession], monkeypatch: pytest.MonkeyPatch) -> None:
    import adapt.store.event_log as event_log

    task_id, expected = await stored_task(sessions)
    monkeypatch.setattr(event_log, "RANGE_SLACK", -10**6)  # never a range
    async with sessions() as session:
        assert shown(await read_events(session, task_id, 0, None)) == expected
        assert shown(await read_events(session, task_id, 9, 7)) == expected[9:16]


async def test_what_is_stored_names_rows_and_keeps_what_changed(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, expected = await stored_task(sessions)
    async with sessions() as session:
        rows = (await session.execute(select(EventRow).where(EventRow.task_id == task_id)
                                      .order_by(EventRow.seq))).scalars().all()
    by_type: dict[str, list[EventRow]] = {}
    for row in rows:
        by_type.setdefault(row.type, []).append(row)
    assert all(set(r.payload) == {"node_id", "changed"} and r.node_id == r.payload["node_id"]
               and "goal" not in r.payload["changed"] for r in by_type["node.updated"])
    assert all(set(r.payload) == {"node"} and r.node_id == r.payload["node"]["id"]
               for r in by_type["node.created"])
    assert all(set(r.payload) == {"step_ref"} for r in by_type["step"])
    assert all(set(r.payload) == {"call_id"} and r.node_id is None for r in by_type["llm_call"])
    stored = sum(len(json.dumps(r.payload)) for r in rows)
    assert stored < 0.4 * sum(len(json.dumps(e["data"])) for e in expected)


async def test_a_resumed_attempt_stores_its_updates_against_the_replayed_ones(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """The second attempt skips the events the first stored, and its first update of a node
    the first attempt created is stored against that node's stored snapshot."""
    task_id, attempt = await leased_task(sessions, 11)
    memory = MemorySink()
    first = DbSink(sessions, task_id, attempt, OWNER)

    class Crash(Exception):
        pass

    class CrashAfter:
        def __init__(self, n: int) -> None:
            self.n = n

        async def emit(self, event: Event) -> None:
            self.n -= 1
            if self.n < 0:
                raise Crash

    with pytest.raises(Crash):
        await run_textcraft(11, FanoutSink([first, CrashAfter(20)]))
    await first.flush()
    async with sessions() as session:
        done = len(await read_events(session, task_id, 0, None))
    assert 0 < done <= 21  # the event the crash interrupted reached the sink first
    second = DbSink(sessions, task_id, attempt, OWNER, skip=done)
    await run_textcraft(11, FanoutSink([memory, second]))
    async with sessions() as session:
        read = shown(await read_events(session, task_id, 0, None))
    # the calls' measured latency differs between the two runs (the service replays the
    # recorded answers; this test runs the model again)
    assert timeless(read) == timeless([{"type": e.type, "data": whole(e)} for e in memory.events])
    assert [e["type"] for e in read] == [e.type for e in memory.events]
    async with sessions() as session:
        updates = (await session.execute(select(EventRow.payload).where(
            EventRow.task_id == task_id, EventRow.type == "node.updated",
            EventRow.ordinal > done))).scalars().all()
    assert updates and all("changed" in p for p in updates)  # none stored whole


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


async def test_rows_of_the_whole_format_read_as_they_are(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """Events written before compaction (whole payloads, no node id) mix with new ones."""
    task_id, expected = await stored_task(sessions)
    async with sessions.begin() as session:
        rows = (await session.execute(select(EventRow).where(EventRow.task_id == task_id)
                                      .order_by(EventRow.seq))).scalars().all()
        for row, event in zip(rows[:10], expected[:10], strict=True):  # as older code wrote
            row.payload = event["data"]
            row.node_id = None
        last = rows[-1].seq
        await session.execute(insert(EventRow).values(
            task_id=task_id, seq=last + 1, type="task.resumed", payload={"attempt": 2},
            ordinal=None, created_at=utcnow()))
    async with sessions() as session:
        read = shown(await read_events(session, task_id, 0, None))
        tail = shown(await read_events(session, task_id, 5, None))
    extra = {"type": "task.resumed", "data": {"attempt": 2}}
    assert read == [*expected, extra]
    assert tail == [*expected[5:], extra]
