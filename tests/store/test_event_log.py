"""The compact event log (``adapt.store.event_log``): what is stored names other rows and keeps
only what changed; what is read is every event whole, as the engine emitted it, from any
``seq``, page by page, after a resume, and for rows of the older whole format. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import Event, FanoutSink, LLMCallMade, MemorySink, TaskFinished
from adapt.store.event_log import ROW, SEVERAL_NODES, NodeStates, expand, read_events, whole_node
from adapt.store.models import EventRow, utcnow
from adapt.store.sink import DbSink
from benchmarks.perfkit import OWNER, leased_task, run_textcraft


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


async def test_snapshots_are_rebuilt_from_rows_read_back_a_few_at_a_time(
        sessions: async_sessionmaker[AsyncSession], monkeypatch: pytest.MonkeyPatch) -> None:
    import adapt.store.event_log as event_log

    task_id, expected = await stored_task(sessions)
    monkeypatch.setattr(event_log, "FOLD_CHUNK", 1)  # one row per read, going back
    async with sessions() as session:
        for since in range(1, len(expected), 3):
            assert shown(await read_events(session, task_id, since, 4)) == expected[since:since + 4]


async def stored_rows(sessions: async_sessionmaker[AsyncSession], task_id: str
                      ) -> list[Any]:
    async with sessions() as session:
        return list((await session.execute(
            select(*ROW)
            .where(EventRow.task_id == task_id).order_by(EventRow.seq))).all())


async def test_what_is_stored_names_rows_and_keeps_what_changed(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, expected = await stored_task(sessions)
    rows = await stored_rows(sessions, task_id)
    events = [e for row in rows for e in expand(*row)]
    assert [seq for seq, *_ in events] == list(range(1, len(expected) + 1))
    by_type: dict[str, list[Any]] = {}
    for _, type_, _, node_id, payload in events:
        by_type.setdefault(type_, []).append((node_id, payload))
    assert all(set(p) == {"node_id", "changed"} and n == p["node_id"]
               and "goal" not in p["changed"] for n, p in by_type["node.updated"])
    # a new node: the fields that are not their default
    assert all(set(p) == {"n"} and n == p["n"]["id"] and "steps_count" not in p["n"]
               for n, p in by_type["node.created"])
    assert all(set(p) == {"step_ref"} and n is None for n, p in by_type["step"])
    assert all(set(p) == {"call_id"} and n is None for n, p in by_type["llm_call"])
    assert all(row.payload is None and row.packed for row in rows if row.span > 1)
    stored = sum(len(row.packed or json.dumps(row.payload)) for row in rows)
    assert stored < 0.1 * sum(len(json.dumps(e["data"])) for e in expected)
    # one row per write: a call and what followed it (its step, node updates) are one row
    assert len(rows) < 0.4 * len(expected)
    assert all(row.span >= 2 for row in rows if row.type == "llm_call")
    several = [row for row in rows if row.node_id == SEVERAL_NODES]
    assert several and all(len({n for _, t, _, n, _ in expand(*row) if n is not None}) > 1
                           for row in several)


async def test_a_row_of_several_events_reads_from_any_event_in_it(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """A page may start and end in the middle of a stored row."""
    task_id, expected = await stored_task(sessions)
    rows = await stored_rows(sessions, task_id)
    inside = [row.seq + k for row in rows if row.span > 2 for k in (1, row.span - 1)]
    assert inside
    async with sessions() as session:
        for since in inside:
            assert shown(await read_events(session, task_id, since, 1)) == expected[since:since + 1]
            assert shown(await read_events(session, task_id, since, None)) == expected[since:]


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
    updates = [p for row in await stored_rows(sessions, task_id)
               for _, t, ordinal, _, p in expand(*row)
               if t == "node.updated" and ordinal is not None and ordinal > done]
    assert updates and all("changed" in p for p in updates)  # none stored whole


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


async def test_rows_of_the_older_formats_read_as_they_are(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """Events written before compaction (whole payloads) and before rows held
    several events (one compact event per row, new nodes whole) mix with new ones."""
    task_id, expected = await stored_task(sessions)
    rows = await stored_rows(sessions, task_id)
    events = [e for row in rows for e in expand(*row)]
    async with sessions.begin() as session:
        created = {r.seq: r for r in (await session.execute(select(EventRow).where(
            EventRow.task_id == task_id))).scalars().all()}
        await session.execute(delete(EventRow).where(EventRow.task_id == task_id,
                                                     EventRow.seq <= events[20][0]))
        for (seq, type_, ordinal, node_id, payload), event in zip(events[:21], expected[:21],
                                                                  strict=True):
            if seq <= 10:  # as the code before 0011 wrote (0011 filled in the node ids)
                payload = event["data"]
            elif "n" in payload:  # as the code before 0020 wrote
                payload = {"node": whole_node(payload["n"])}
            stamp = max(r.created_at for s, r in created.items() if s <= seq)
            session.add(EventRow(task_id=task_id, seq=seq, type=type_, payload=payload,
                                 ordinal=ordinal, node_id=node_id, created_at=stamp, span=1))
        await session.flush()
        # a row of several events that began at or before event 21 now starts after it
        first_kept = min(s for s in created if s > events[20][0])
        if first_kept != events[21][0]:
            row = created[first_kept]
            assert row.packed is not None
            missing = [e for e in events if events[20][0] < e[0] < first_kept]
            for seq, type_, ordinal, node_id, payload in missing:
                session.add(EventRow(task_id=task_id, seq=seq, type=type_, payload=payload,
                                     ordinal=ordinal, node_id=node_id, created_at=utcnow()))
        last = rows[-1].seq + rows[-1].span - 1
        await session.execute(insert(EventRow).values(
            task_id=task_id, seq=last + 1, type="task.resumed", payload={"attempt": 2},
            ordinal=None, created_at=utcnow()))
    async with sessions() as session:
        read = shown(await read_events(session, task_id, 0, None))
        tail = shown(await read_events(session, task_id, 5, None))
        middle = shown(await read_events(session, task_id, 15, None))
        # pages of 3, each on its own (the snapshots rebuilt for each): rows of one event
        # read a few rows at a time until the page is full
        paged: list[Any] = []
        while page := await read_events(session, task_id, len(paged), 3):
            assert len(page) == 3 or len(paged) + len(page) == len(expected) + 1
            paged += page
    extra = {"type": "task.resumed", "data": {"attempt": 2}}
    assert shown(paged) == [*expected, extra]
    assert read == [*expected, extra]
    assert tail == [*expected[5:], extra]
    assert middle == [*expected[15:], extra]
