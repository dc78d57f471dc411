"""Prompts stored once (``adapt.store.prompts``) and the sink's compact rows, on SQLite and
PostgreSQL: every prompt reads back exactly as it was sent, shared blocks are one row, and
replay gets every recorded response whole."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import FanoutSink, LLMCallMade, MemorySink, NodeCreated, TaskFinished
from adapt.engine.tree import LLMCall, Node, TaskResult
from adapt.llm.base import ChatResponse, Usage
from adapt.store.models import LLMCallRow, PromptBlock
from adapt.store.prompts import call_prompts, decode, encode, paragraphs
from adapt.store.sink import DbSink
from adapt.store.task_rows import replay_material
from benchmarks.perfkit import OWNER, leased_task, run_textcraft


def test_documents_round_trip() -> None:
    messages = [{"role": "system", "content": "be: brief\n3:x\n"},
                {"role": "user", "content": "héllo\n\nwörld"}, {"role": "assistant", "content": ""}]
    assert decode(encode(None, messages) or "") == (None, messages)
    assert decode(encode("a prompt\n\nwith: parts", None) or "") == ("a prompt\n\nwith: parts", None)
    assert encode(None, None) is None
    text = ("x" * 300 + "\n\n") * 5 + "tail\n\n\n"
    assert "".join(paragraphs(text)) == text and len(paragraphs(text)) == 6


async def _run(sessions: async_sessionmaker[AsyncSession], seed: int) -> tuple[str, MemorySink]:
    task_id, attempt = await leased_task(sessions, seed)
    memory = MemorySink()
    await run_textcraft(seed, FanoutSink([memory, DbSink(sessions, task_id, attempt, OWNER)]))
    return task_id, memory


async def test_every_prompt_reads_back_exactly_and_shared_blocks_are_stored_once(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    first, memory = await _run(sessions, 3)
    second, other = await _run(sessions, 4)
    async with sessions() as session:
        for task_id, sent in ((first, memory), (second, other)):
            stored = await call_prompts(session, task_id)
            assert len(stored) == len(sent.calls) > 3
            for call in sent.calls:
                assert (stored[call.id].prompt, stored[call.id].messages) == (
                    call.prompt, call.messages)
        rows = (await session.execute(select(LLMCallRow))).scalars().all()
        assert all(r.prompt is None and r.messages is None and r.prompt_ref for r in rows)
        blocks = (await session.execute(select(PromptBlock))).scalars().all()
    sent_chars = sum(len(c.prompt or "") for c in memory.calls + other.calls)
    stored_chars = sum(len(b.text) for b in blocks)
    # the executor's header is one block for both tasks, and trajectories are stored as deltas
    header = paragraphs("P" + memory.calls[0].prompt)[0]  # type: ignore[operator]
    assert [b.text for b in blocks].count(header) == 1
    assert stored_chars < sent_chars / 4


async def test_a_chat_call_and_a_resumed_call_read_back(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """Messages are stored like prompts; a resumed attempt (another sink, same blocks) and a
    prompt that extends the node's previous one both read back exactly."""
    task_id, attempt = await leased_task(sessions, 0)
    messages = [{"role": "system", "content": "rules\n\n" * 60},
                {"role": "user", "content": "goal"}]
    longer = [*messages, {"role": "assistant", "content": "act"},
              {"role": "user", "content": "observation"}]

    def call(i: int, msgs: list[dict[str, str]]) -> LLMCallMade:
        return LLMCallMade(call=LLMCall(id=i, node_id=1, role="executor", model="m",
                                        messages=msgs, completion=f"answer {i}"),
                           request_fingerprint="f" * 64,
                           response=ChatResponse(text=f"answer {i}", model="m",
                                                 usage=Usage(prompt_tokens=3)))

    sink = DbSink(sessions, task_id, attempt, OWNER)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await sink.emit(call(1, messages))
    await sink.emit(call(2, longer))
    await sink.settle()
    again = DbSink(sessions, task_id, attempt, OWNER, skip=3)
    for event in (NodeCreated(node=Node(id=1, goal="g")), call(1, messages), call(2, longer),
                  call(3, longer[:1])):
        await again.emit(event)
    await again.settle()
    async with sessions() as session:
        stored = await call_prompts(session, task_id)
        blocks = int(await session.scalar(select(func.count()).select_from(PromptBlock)) or 0)
    assert [stored[i].messages for i in (1, 2, 3)] == [messages, longer, longer[:1]]
    assert all(stored[i].prompt is None for i in (1, 2, 3))
    assert blocks < 12  # 60 paragraphs of rules, stored in a few blocks, once


async def test_replay_gets_every_response_whole(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    """The stored response keeps only what the call's columns do not say; replay rebuilds the
    whole response, equal to what the model answered."""
    task_id, attempt = await leased_task(sessions, 5)
    memory = MemorySink()
    await run_textcraft(5, FanoutSink([memory, DbSink(sessions, task_id, attempt, OWNER)]))
    answered = [e for e in memory.events if isinstance(e, LLMCallMade)]
    calls, events = await replay_material(sessions, task_id)
    assert events == len(memory.events)
    assert [fp for fp, _ in calls] == [e.request_fingerprint for e in answered]
    for (_, response), event in zip(calls, answered, strict=True):
        assert event.response is not None
        assert ChatResponse.model_validate(response) == event.response
    async with sessions() as session:
        stored = (await session.execute(select(LLMCallRow.response))).scalars().all()
    assert all(set(r) <= {"finish_reason", "logprobs"} for r in stored)


async def test_a_lost_lease_writes_nothing(sessions: async_sessionmaker[AsyncSession]) -> None:
    from adapt.service.errors import LeaseLost

    task_id, attempt = await leased_task(sessions, 0)
    sink = DbSink(sessions, task_id, attempt + 1, OWNER)  # not the attempt holding the lease
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    with pytest.raises(LeaseLost):
        await sink.emit(TaskFinished(result=TaskResult(status="failed", success=False, goal="g",
                                                       strategy="adapt", d_max=1)))
    async with sessions() as session:
        assert await session.scalar(select(func.count()).select_from(LLMCallRow)) == 0
        from adapt.store.models import EventRow, NodeRow, Task

        assert await session.scalar(select(func.count()).select_from(NodeRow)) == 0
        assert await session.scalar(select(func.count()).select_from(EventRow)) == 0
        task = await session.get(Task, task_id)
        assert task is not None and task.status == "running" and task.last_seq == 0


async def test_no_event_copies_a_prompt(sessions: async_sessionmaker[AsyncSession]) -> None:
    """The event log references calls: no event of any type holds a prompt's text."""
    import json

    from adapt.store.event_log import stored_events

    task_id, memory = await _run(sessions, 3)
    async with sessions() as session:
        payloads = [e[4] for e in await stored_events(session, task_id)]
    assert len(payloads) == len(memory.events)
    header = paragraphs("P" + (memory.calls[0].prompt or ""))[0][1:]
    planner = next(c.prompt for c in memory.calls if c.role == "planner") or ""
    for payload in payloads:
        text = json.dumps(payload, ensure_ascii=False)
        assert header not in text and planner[:300] not in text
