"""``DbSink`` writes: the flush before an LLM call runs while the model answers, in order; an
answered call is written with what follows it, when the task next waits; failures still stop
the attempt before its next call. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import LLMCallMade, NodeCreated, NodeUpdated, StepAppended, flush
from adapt.engine.tree import LLMCall, Node, Step
from adapt.llm.base import ChatResponse
from adapt.service.errors import LeaseLost
from adapt.store.db import create_engine, session_factory
from adapt.store.event_log import ROW, expand
from adapt.store.models import EventRow, LLMCallRow, Task
from adapt.store.sink import DbSink
from benchmarks.perfkit import OWNER, leased_task


def answered(i: int) -> LLMCallMade:
    return LLMCallMade(call=LLMCall(id=i, node_id=1, role="executor", model="m", prompt="p",
                                    completion="c"),
                       request_fingerprint="f" * 64, response=ChatResponse(text="c", model="m"))


def counted(sink: DbSink) -> list[int]:
    """The number of events of each write ``sink`` sends, in order."""
    writes: list[int] = []
    write = sink._write

    async def wrapper(*args: Any) -> Any:
        writes.append(len(args[4].events))
        return await write(*args)

    sink._write = wrapper  # type: ignore[assignment]
    return writes


async def stored_types(sessions: async_sessionmaker[AsyncSession], task_id: str) -> list[str]:
    async with sessions() as session:
        rows = (await session.execute(
            select(*ROW)
            .where(EventRow.task_id == task_id).order_by(EventRow.seq))).all()
    return [type_ for row in rows for _, type_, _, _, _ in expand(*row)]


async def test_the_flush_before_a_call_does_not_wait_and_lands_first(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, attempt = await leased_task(sessions, 0)
    sink = DbSink(sessions, task_id, attempt, OWNER)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await flush(sink, soon=True)  # the engine's flush before a call
    assert sink._pending is not None  # written while the model answers
    await sink.emit(StepAppended(step=Step(kind="action", node_id=1, index=1, raw="a", text="a",
                                           observation="o")))
    await sink.emit(answered(1))  # due: written when the task next waits, after the batch
    await sink.settle()
    async with sessions() as session:
        task = await session.get(Task, task_id)
    assert await stored_types(sessions, task_id) == ["node.created", "step", "llm_call"]
    assert task is not None and task.last_seq == 3 and task.llm_calls == 1


async def test_an_answer_goes_with_what_follows_it_before_the_next_call(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """The answer, the step it led to and the node's update are one write, made by the flush
    before the next call (a synchronous environment does not wait in between), which waits
    for it: a call is stored before the next one is sent."""
    task_id, attempt = await leased_task(sessions, 0)
    sink = DbSink(sessions, task_id, attempt, OWNER)
    writes = counted(sink)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await flush(sink, soon=True)
    for i in (1, 2, 3):
        await sink.emit(answered(i))
        await sink.emit(StepAppended(step=Step(kind="action", node_id=1, index=i, raw="a",
                                               text="a", observation="o")))
        await sink.emit(NodeUpdated(node=Node(id=1, goal="g", status="running")))
        await flush(sink, soon=True)
        assert sink._pending is None  # stored before the next call is sent
        assert len(await stored_types(sessions, task_id)) == 1 + 3 * i
    assert writes == [1, 3, 3, 3]
    assert await stored_types(sessions, task_id) == (
        ["node.created"] + ["llm_call", "step", "node.updated"] * 3)


async def test_an_answered_call_is_written_as_soon_as_the_task_waits(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """No flush needed: once the task waits (e.g. on an environment that runs elsewhere), the
    answer is stored, so a crash from then on does not pay for the call again."""
    task_id, attempt = await leased_task(sessions, 0)
    sink = DbSink(sessions, task_id, attempt, OWNER)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await sink.emit(answered(1))
    for _ in range(200):
        await asyncio.sleep(0.01)  # the task waits
        if await stored_types(sessions, task_id):
            break
    assert await stored_types(sessions, task_id) == ["node.created", "llm_call"]


async def test_a_lost_lease_in_the_background_write_stops_the_attempt_before_the_next_call(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, attempt = await leased_task(sessions, 0)
    stale = DbSink(sessions, task_id, attempt + 1, OWNER)
    await stale.emit(NodeCreated(node=Node(id=1, goal="g")))
    await flush(stale, soon=True)  # does not raise: the write runs while the model answers
    await stale.emit(answered(1))  # neither: the answer is written later
    with pytest.raises(LeaseLost):
        await flush(stale, soon=True)  # the flush before the next call
    async with sessions() as session:
        assert await session.scalar(select(func.count()).select_from(LLMCallRow)) == 0
        assert await session.scalar(select(func.count()).select_from(EventRow)) == 0


async def test_a_lost_lease_is_raised_by_settle_with_an_answer_still_buffered(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, attempt = await leased_task(sessions, 0)
    stale = DbSink(sessions, task_id, attempt + 1, OWNER)
    await stale.emit(NodeCreated(node=Node(id=1, goal="g")))
    await stale.emit(answered(1))
    with pytest.raises(LeaseLost):
        await stale.settle()
    async with sessions() as session:
        assert await session.scalar(select(func.count()).select_from(EventRow)) == 0


async def test_engine_snapshots_do_not_change_with_the_node() -> None:
    """Events carry snapshots: a later change of the node (its usage grows in place) does not
    reach an event already emitted."""
    from adapt.engine.config import RunConfig
    from adapt.engine.events import MemorySink
    from adapt.engine.runtime import Run
    from adapt.envs import registry

    memory = MemorySink()
    run = Run(registry.create("textcraft"), RunConfig(), [object()],  # type: ignore[list-item]
              sink=memory)
    node = await run.new_node(goal="g")
    await run.update(node, status="running")
    node.usage.add(10, 2, 0.0)
    await run.update(node, status="succeeded")
    first, second, third = (e.node for e in memory.events
                            if isinstance(e, NodeCreated | NodeUpdated))
    assert (first.usage.llm_calls, second.usage.llm_calls, third.usage.llm_calls) == (0, 0, 1)
    assert [first.status, second.status, third.status] == ["pending", "running", "succeeded"]


async def test_a_chat_call_is_marked_so_and_read_back_as_sent(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """Prompts live in blocks; whether a call sent chat messages stays a column (the GenAI
    metrics' operation, ``chat`` or ``text_completion``), and both kinds read back exactly."""
    from adapt.store.prompts import call_prompts
    from adapt.store.traces import genai_histograms

    task_id, attempt = await leased_task(sessions, 0)
    sink = DbSink(sessions, task_id, attempt, OWNER)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    await sink.emit(LLMCallMade(
        call=LLMCall(id=1, node_id=1, role="executor", model="chatty", messages=messages,
                     completion="c"),
        request_fingerprint="f" * 64, response=ChatResponse(text="c", model="chatty")))
    await sink.emit(answered(2))
    await sink.flush()
    async with sessions() as session:
        chat = dict((await session.execute(select(LLMCallRow.id, LLMCallRow.chat).where(
            LLMCallRow.task_id == task_id))).all())
        sent = await call_prompts(session, task_id)
        operations = {(h.model, h.operation) for h in await genai_histograms(session)}
    assert chat == {1: True, 2: False}
    assert sent[1].messages == messages and sent[1].prompt is None
    assert sent[2].prompt == "p" and sent[2].messages is None
    assert {("chatty", "chat"), ("m", "text_completion")} <= operations


async def test_a_failed_write_forgets_the_prompt_blocks_taken_as_stored(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """A database that failed may have lost what it acknowledged (a crashed server with
    synchronous_commit=off): after a failed write no block is taken as stored, so a later call
    sends its blocks again instead of pointing at a lost one."""
    task_id, attempt = await leased_task(sessions, 0)
    sink = DbSink(sessions, task_id, attempt, OWNER)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await sink.emit(answered(1))
    await flush(sink)
    known = sink._prompts.known
    assert known  # the first call's blocks were stored

    async def broken(*_: object) -> None:
        raise ConnectionResetError("the server went away")

    sink._write = broken  # type: ignore[assignment]
    with pytest.raises(ConnectionResetError):
        await sink.emit(answered(2))  # an answer is written at once
        await flush(sink)
    assert not known


async def test_a_burst_of_writes_waits_for_pooled_connections(pg_url: str) -> None:
    """More concurrent writes than the pool holds queue for its connections (all but two of
    them) instead of opening overflow connections that the pool closes after one write."""
    from sqlalchemy import event

    from adapt.store.batch import SPARE_CONNECTIONS

    engine = create_engine(pg_url, pool_size=4)
    opened: list[int] = []
    event.listen(engine.sync_engine, "connect", lambda *_: opened.append(1))
    sessions = session_factory(engine)
    try:
        leased = [await leased_task(sessions, seed) for seed in range(24)]
        before = len(opened)
        sinks = [DbSink(sessions, task_id, attempt, OWNER) for task_id, attempt in leased]
        for sink in sinks:  # no wait in between: 24 answers due at once
            await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
            await sink.emit(answered(1))
        await asyncio.gather(*(sink.settle() for sink in sinks))
        async with sessions() as session:
            stored = await session.scalar(select(func.count()).select_from(LLMCallRow).where(
                LLMCallRow.task_id.in_([s.task_id for s in sinks])))
        assert stored == 24
        assert len(opened) <= 4  # never beyond the pool: no overflow connection
        assert len(opened) - before <= 4 - SPARE_CONNECTIONS
    finally:
        await engine.dispose()
