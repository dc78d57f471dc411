"""Values a row holds already are stored once (``adapt.store.elided``, migration 0021) and every
reader reads them whole: the event log, the node detail's rows, the archive, the journal a
resumed environment replays. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import FanoutSink, LLMCallMade, MemorySink, NodeUpdated, StepAppended
from adapt.engine.tree import LLMCall, Step
from adapt.store import archive, queries
from adapt.store.elided import (
    CLEAN_CHECK,
    read_monitor,
    read_request_model,
    read_text,
    stored_monitor,
    stored_request_model,
    stored_text,
)
from adapt.store.event_log import read_events
from adapt.store.journal import split_steps
from adapt.store.models import LLMCallRow, NodeRow, StepRow
from adapt.store.sink import DbSink
from benchmarks.perfkit import OWNER, leased_task, run_textcraft


# -- the values -------------------------------------------------------------------------------
@pytest.mark.parametrize(("text_", "raw"), [("get 1 log", "get 1 log"), ("get", "get 1 log"),
                                            ("", "x"), ("", "")])
def test_a_step_text_reads_back_whole(text_: str, raw: str) -> None:
    assert read_text(stored_text(text_, raw), raw) == text_
    assert (stored_text(text_, raw) is None) == (text_ == raw)


@pytest.mark.parametrize(("asked", "model"), [("m", "m"), ("m", "m-2026-01-01"), (None, "m"),
                                              (None, ""), ("m", "")])
def test_a_request_model_reads_back_whole(asked: str | None, model: str) -> None:
    assert read_request_model(stored_request_model(asked, model), model) == asked


@pytest.mark.parametrize("record", [
    None, dict(CLEAN_CHECK), {"corrections": 0, "validations": 1, "violations": 0},
    {"validations": 1.0, "violations": 0, "corrections": 0},  # not the integers: kept
    {"validations": True, "violations": 0, "corrections": 0},
    {"validations": 1, "violations": 0, "corrections": 0, "kind": "x"},
    {"validations": 1, "violations": 1, "corrections": 0}, {}])
def test_a_monitor_record_reads_back_whole(record: dict[str, Any] | None) -> None:
    stored = stored_monitor(record)
    back = read_monitor(stored)
    assert back == record
    if record is not None:
        assert [(k, type(v)) for k, v in sorted(back.items())] == [  # type: ignore[union-attr]
            (k, type(v)) for k, v in sorted(record.items())]
    assert (stored == []) == (record == CLEAN_CHECK and all(
        type(v) is int for v in (record or {}).values()))


# -- a task through the sink ------------------------------------------------------------------
async def _stored_task(sessions: async_sessionmaker[AsyncSession]) -> tuple[str, MemorySink]:
    task_id, attempt = await leased_task(sessions, 3)
    memory = MemorySink()
    await run_textcraft(3, FanoutSink([memory, DbSink(sessions, task_id, attempt, OWNER)]))
    return task_id, memory


async def test_the_sink_stores_each_value_once_and_every_reader_reads_it_whole(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, memory = await _stored_task(sessions)
    steps = [e.step for e in memory.events if isinstance(e, StepAppended)]
    calls = [e.call for e in memory.events if isinstance(e, LLMCallMade)]
    assert steps and calls and all(s.text == s.raw for s in steps)
    assert all(c.request_model == c.model and c.monitor == CLEAN_CHECK for c in calls)
    async with sessions() as session:
        stored = (await session.execute(text(
            "SELECT count(*), count(text) FROM steps WHERE task_id = :t"), {"t": task_id})).one()
        assert tuple(stored) == (len(steps), 0)  # the text is the raw: stored once
        models = (await session.execute(text(
            "SELECT request_model FROM llm_calls WHERE task_id = :t"),
            {"t": task_id})).scalars().all()
        assert models == [""] * len(calls)  # the model that answered
        monitors = (await session.execute(text(
            "SELECT monitor FROM llm_calls WHERE task_id = :t"), {"t": task_id})).scalars().all()
        assert all(m in ([], "[]") for m in monitors)

        # the event log: every event as the engine emitted it
        events = await read_events(session, task_id, 0, None)
        by_type = [e.data for e in events if e.type in ("step", "llm_call")]
        assert [d["step"] for d in by_type if "step" in d] == [
            s.model_dump(mode="json") for s in steps]
        read_calls = [d["call"] for d in by_type if "call" in d]
        assert [(c["request_model"], c["monitor"]) for c in read_calls] == [
            (c.request_model, c.monitor) for c in calls]
        # the node detail's rows (ORM objects)
        node_id = steps[0].node_id
        rows = await queries.node_steps(session, task_id, node_id)
        assert [Step.model_validate(r, from_attributes=True) for r in rows] == [
            s for s in steps if s.node_id == node_id]
        call_rows = await queries.node_calls(session, task_id, node_id)
        assert call_rows and [(r.request_model, r.monitor) for r in call_rows] == [
            (c.request_model, c.monitor) for c in calls if c.node_id == node_id]
        # a plan names the planner's call, and reads whole (the node detail, the node list)
        plans = {e.node.id: e.node.plan.model_dump(mode="json") for e in memory.events
                 if isinstance(e, NodeUpdated) and e.node.plan is not None}
        assert plans
        raw = (await session.execute(text(
            "SELECT id, plan FROM nodes WHERE task_id = :t AND plan IS NOT NULL"),
            {"t": task_id})).all()
        for _, plan in raw:
            plan = json.loads(plan) if isinstance(plan, str) else plan
            assert "raw" not in plan and isinstance(plan["raw_call"], int)
        for node_id, plan in plans.items():
            node = await queries.get_node(session, task_id, node_id)
            assert node is not None and node.plan == plan
        assert {n.id: n.plan for n in await queries.task_nodes(session, task_id)
                if n.plan is not None} == plans
        assert not session.dirty
        # the journal a resumed environment replays
        before, _ = await split_steps(session, task_id, None)
        assert [r.action for r in before] == [s.text for s in steps if s.kind == "action"]
        # the archive holds whole values, and an import stores them once again
        document = await archive.read_task(session, task_id)
    assert [r["text"] for r in document["steps"]] == [s.text for s in steps]
    assert {r["id"]: r["plan"] for r in document["nodes"] if r["plan"] is not None} == plans
    assert {(r["request_model"], str(r["monitor"])) for r in document["calls"]} == {
        (c.request_model, str(c.monitor)) for c in calls}


async def test_rows_written_through_the_orm_are_stored_once_and_read_whole(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, _ = await leased_task(sessions, 1)
    async with sessions.begin() as session:
        session.add(NodeRow(task_id=task_id, id=1, depth=1, kind="task", goal="g",
                            status="running"))
        await session.flush()
        step = StepRow(task_id=task_id, node_id=1, index=1, kind="action", raw="get 1 log",
                       text="get 1 log", observation="ok")
        other = StepRow(task_id=task_id, node_id=1, index=2, kind="action", raw="> get 1 log",
                        text="get 1 log", observation="ok")
        unknown = LLMCallRow(task_id=task_id, id=1, node_id=1, role="executor", model="m",
                             request_fingerprint="f", response={}, completion="c")
        same = LLMCallRow(task_id=task_id, id=2, node_id=1, role="executor", model="m",
                          request_model="m", request_fingerprint="f", response={},
                          completion="c", monitor=dict(CLEAN_CHECK))
        session.add_all([step, other, unknown, same])
        await session.flush()
        # the objects stay whole after the write
        assert (step.text, other.text) == ("get 1 log", "get 1 log")
        assert (unknown.request_model, same.request_model) == (None, "m")
        assert same.monitor == CLEAN_CHECK
    async with sessions() as session:
        stored = (await session.execute(text(
            'SELECT text FROM steps WHERE task_id = :t ORDER BY "index"'),
            {"t": task_id})).scalars().all()
        assert stored == [None, "get 1 log"]
        models = (await session.execute(text(
            "SELECT request_model FROM llm_calls WHERE task_id = :t ORDER BY id"),
            {"t": task_id})).scalars().all()
        assert models == [None, ""]
        steps = (await session.execute(select(StepRow).where(StepRow.task_id == task_id)
                                       .order_by(StepRow.index))).scalars().all()
        assert [s.text for s in steps] == ["get 1 log", "get 1 log"]
        calls = (await session.execute(select(LLMCallRow).where(LLMCallRow.task_id == task_id)
                                       .order_by(LLMCallRow.id))).scalars().all()
        assert [(c.request_model, c.monitor) for c in calls] == [(None, None),
                                                                 ("m", CLEAN_CHECK)]
        assert not session.dirty  # read whole, not changed


def test_a_call_that_recorded_no_request_model_stores_null_as_before() -> None:
    call = LLMCall(id=1, node_id=1, role="executor", model="m", completion="c")
    assert stored_request_model(call.request_model, call.model) is None
    assert read_request_model(None, "m") is None  # rows from before 0012, as they were
