"""Calls with tools are stored like every call, on SQLite and PostgreSQL: the messages with
their tool calls and the tools offered read back as sent (in the prompt blocks), the model's
tool calls come back with the response (replay, the event log, the node detail), and rows
and documents written before tools read as they did."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import LLMCallMade, NodeCreated
from adapt.engine.tree import LLMCall, Node
from adapt.llm.base import ChatResponse, ToolCall, Usage
from adapt.store.event_log import read_events
from adapt.store.models import LLMCallRow
from adapt.store.prompts import call_prompts, decode, encode, stored
from adapt.store.responses import full_response
from adapt.store.sink import DbSink
from adapt.store.task_rows import replay_material
from benchmarks.perfkit import OWNER, leased_task

TOOLS = [{"type": "function", "function": {
    "name": "get", "description": "Fetch: a base item.\n\nOnly base items.",
    "parameters": {"type": "object", "properties": {"item": {"type": "string"}}}}}]
FIRST: list[dict[str, Any]] = [
    {"role": "system", "content": "rules\n\n" * 40},
    {"role": "user", "content": "Goal: fetch 2 stick."},
]
SECOND: list[dict[str, Any]] = [
    *FIRST,
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "call_1", "name": "get", "arguments": '{"item": "stick:2"}'}]},
    {"role": "tool", "content": "Got 2 stick\n3:x", "tool_call_id": "call_1"},
]


def test_documents_with_tools_and_tool_calls_round_trip() -> None:
    first, second = encode(None, FIRST, TOOLS), encode(None, SECOND, TOOLS)
    assert first is not None and second is not None
    assert stored(second).messages == SECOND and stored(second).tools == TOOLS
    assert decode(second) == (None, SECOND)
    # the next call of a node extends its previous document: one new block
    assert second.startswith(first)
    assert stored(encode("a prompt", None, TOOLS) or "").prompt == "a prompt"
    # documents written before tools existed read as they always did
    old = stored("Msystem:2\nhiuser:3\na:b")
    assert old.messages == [{"role": "system", "content": "hi"},
                            {"role": "user", "content": "a:b"}] and old.tools is None


def test_a_row_written_before_tools_reads_without_tool_calls() -> None:
    columns = {"completion": "get 1 stick", "prompt_tokens": 3, "completion_tokens": 2,
               "usage_estimated": False, "latency_s": 0.1, "model": "m", "simulated": False,
               "retries": 0}
    old = full_response({"finish_reason": "stop"}, columns)
    assert ChatResponse.model_validate(old).tool_calls is None



async def test_a_tool_calling_call_is_stored_and_read_back_whole(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    task_id, attempt = await leased_task(sessions, 0)
    answer = ChatResponse(text="", model="m", usage=Usage(prompt_tokens=40, completion_tokens=9),
                          finish_reason="tool_calls",
                          tool_calls=[ToolCall(id="call_2", name="get",
                                               arguments='{"item": "stick"}')])
    plain = ChatResponse(text="thinking", model="m", usage=Usage(prompt_tokens=3),
                         finish_reason="stop")

    def made(i: int, messages: list[dict[str, Any]], response: ChatResponse) -> LLMCallMade:
        calls = [c.model_dump() for c in response.tool_calls or ()] or None
        return LLMCallMade(call=LLMCall(id=i, node_id=1, role="executor", model="m",
                                        messages=messages, tools=TOOLS, completion=response.text,
                                        tool_calls=calls,
                                        prompt_tokens=response.usage.prompt_tokens,
                                        completion_tokens=response.usage.completion_tokens),
                           request_fingerprint=f"{i}" * 64, response=response)

    sink = DbSink(sessions, task_id, attempt, OWNER)
    await sink.emit(NodeCreated(node=Node(id=1, goal="g")))
    await sink.emit(made(1, FIRST, answer))
    await sink.emit(made(2, SECOND, plain))
    await sink.settle()

    async with sessions() as session:
        prompts = await call_prompts(session, task_id)
        rows = (await session.execute(select(LLMCallRow).where(
            LLMCallRow.task_id == task_id).order_by(LLMCallRow.id))).scalars().all()
        events = await read_events(session, task_id, 0, None)
    assert [prompts[i].messages for i in (1, 2)] == [FIRST, SECOND]
    assert prompts[1].tools == TOOLS and prompts[2].tools == TOOLS
    assert [r.chat for r in rows] == [True, True]
    assert rows[0].tool_calls == [{"id": "call_2", "name": "get", "arguments": '{"item": "stick"}'}]
    assert rows[1].tool_calls is None
    assert set(rows[1].response) <= {"finish_reason"}  # nothing stored for a plain answer

    calls, _ = await replay_material(sessions, task_id)
    assert [ChatResponse.model_validate(r) for _, r in calls] == [answer, plain]

    logged = [e.data["call"] for e in events if e.type == "llm_call"]
    assert logged[0]["tool_calls"] == rows[0].tool_calls and logged[1]["tool_calls"] is None
    assert logged[0]["tools"] is None and logged[0]["messages"] is None  # not in the log


def test_the_node_detail_shows_the_calls() -> None:
    from datetime import datetime

    from api.schemas import LLMCallPublic

    row = LLMCallRow(id=1, node_id=1, role="executor", model="m", simulated=False, stop=[],
                     completion="", prompt_tokens=1, completion_tokens=1, usage_estimated=False,
                     latency_s=0.0, cost_usd=None, attempt=1, retries=0,
                     created_at=datetime(2026, 1, 1),
                     response={"tool_calls": [{"id": "c", "name": "get", "arguments": "{}"}]})
    public = LLMCallPublic.model_validate(row)
    assert public.tool_calls == [{"id": "c", "name": "get", "arguments": "{}"}]
    assert public.tools is None
