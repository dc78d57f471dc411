"""Tool calling and structured output through the OpenAI-compatible backend (a fake server
captures each request), the fingerprint and replay of tool-calling calls, and the fakes'
tool-call answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapt.errors import ProviderError, ReplayDivergence, UserError
from adapt.llm import (
    ChatRequest,
    Message,
    OpenAIChatModel,
    OpenAICompletionModel,
    Recording,
    RecordingModel,
    ReplayModel,
    ToolCall,
    request_fingerprint,
)
from adapt.llm.recording import request_diff
from adapt.llm.testing import FunctionModel, ScriptedModel, tool_call

Server = Any  # tests.support.openai_http.FakeServer

GET = {"type": "function", "function": {
    "name": "get", "description": "Fetch a base item.",
    "parameters": {"type": "object", "properties": {
        "item": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
        "required": ["item", "count"], "additionalProperties": False}}}
CALL = {"id": "call_a1", "type": "function",
        "function": {"name": "get", "arguments": '{"item": "stick", "count": 2}'}}


def conversation() -> list[Message]:
    return [
        Message(role="system", content="You craft."),
        Message(role="user", content="Goal: fetch 2 stick."),
        Message(role="assistant", content="",
                tool_calls=[ToolCall(id="call_0", name="get",
                                     arguments='{"item": "stick", "count": 1}')]),
        Message(role="tool", content="Got 1 stick", tool_call_id="call_0"),
    ]


async def test_tools_go_in_the_tools_field_and_tool_calls_come_back(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat(None, tool_calls=[CALL], finish_reason="tool_calls",
                                     usage=(30, 9))]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    response = await model.complete(ChatRequest(messages=conversation(), tools=[GET],
                                                tool_choice="auto", max_tokens=40))
    body = fake_server.bodies[0]
    assert body["tools"] == [GET]
    assert body["tool_choice"] == "auto"
    assert body["messages"][2] == {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_0", "type": "function", "function": {
            "name": "get", "arguments": '{"item": "stick", "count": 1}'}}]}
    assert body["messages"][3] == {"role": "tool", "content": "Got 1 stick",
                                   "tool_call_id": "call_0"}
    assert body["messages"][1] == {"role": "user", "content": "Goal: fetch 2 stick."}
    assert response.text == ""
    assert response.tool_calls == [ToolCall(id="call_a1", name="get",
                                            arguments='{"item": "stick", "count": 2}')]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 9)


async def test_a_request_without_tools_sends_no_tool_fields(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat("> inventory")]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    response = await model.complete(ChatRequest(prompt="hi"))
    assert set(fake_server.bodies[0]) == {"model", "messages", "max_tokens", "temperature"}
    assert response.tool_calls is None


async def test_servers_tool_calls_in_other_shapes_are_read(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    # arguments as an object (some servers), no id (llama.cpp's older builds), no usage
    odd = {"type": "function", "function": {"name": "inventory", "arguments": {"all": True}}}
    fake_server.responses = [ok_chat("", tool_calls=[odd], usage=None)]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    response = await model.complete(ChatRequest(messages=conversation(), tools=[GET]))
    assert response.tool_calls == [ToolCall(id="call_0", name="inventory",
                                            arguments='{"all": true}')]
    assert response.usage.estimated and response.usage.completion_tokens > 0
    assert response.usage.prompt_tokens > len(json.dumps([GET])) // 4  # the tools count too

    fake_server.responses = [ok_chat("", tool_calls=[{"function": {"arguments": "{}"}}])]
    with pytest.raises(ProviderError, match="malformed tool calls"):
        await model.complete(ChatRequest(messages=conversation(), tools=[GET]))


async def test_a_completions_model_refuses_tools(fake_server: Server, local_url: str) -> None:
    model = OpenAICompletionModel("m", base_url=local_url, http_client=fake_server.client())
    with pytest.raises(UserError, match="needs a chat model"):
        await model.complete(ChatRequest(prompt="x", tools=[GET]))
    assert fake_server.requests == []


GRAMMAR = 'root ::= "get " [1-9] " stick"\n'
SCHEMA = {"title": "plan", "type": "object", "properties": {"steps": {"type": "array"}},
          "required": ["steps"], "additionalProperties": False}


@pytest.mark.parametrize(("server_kind", "grammar_fields", "schema_fields"), [
    ("vllm", {"structured_outputs": {"grammar": GRAMMAR}},
     {"structured_outputs": {"json": SCHEMA}}),
    ("llama.cpp", {"grammar": GRAMMAR}, {"json_schema": SCHEMA}),
    ("openai", {}, {"response_format": {"type": "json_schema", "json_schema": {
        "name": "plan", "schema": SCHEMA, "strict": True}}}),
    (None, {}, {}),
])
@pytest.mark.parametrize("chat", [True, False])
async def test_grammars_and_schemas_reach_each_server_kind_in_its_fields(
    fake_server: Server, ok_chat: Any, ok_completion: Any, local_url: str,
    server_kind: str | None, grammar_fields: dict[str, Any], schema_fields: dict[str, Any],
    chat: bool,
) -> None:
    cls = OpenAIChatModel if chat else OpenAICompletionModel
    fake_server.responses = [ok_chat() if chat else ok_completion()]
    model = cls("m", base_url=local_url, http_client=fake_server.client(),
                server_kind=server_kind)
    plain = {"model", "messages" if chat else "prompt", "max_tokens", "temperature"}
    for request, fields in ((ChatRequest(prompt="p", grammar=GRAMMAR), grammar_fields),
                            (ChatRequest(prompt="p", json_schema=SCHEMA), schema_fields),
                            # both: the schema (llama.cpp refuses the two together)
                            (ChatRequest(prompt="p", grammar=GRAMMAR, json_schema=SCHEMA),
                             schema_fields),
                            (ChatRequest(prompt="p"), {})):
        await model.complete(request)
        body = fake_server.bodies[-1]
        assert {k: v for k, v in body.items() if k not in plain} == fields
    # vLLM (since 0.12) ignores the old field, which is never sent any more
    assert not any("guided_grammar" in b for b in fake_server.bodies)


def test_the_openai_api_is_an_openai_server_unless_told_otherwise() -> None:
    from adapt.llm.openai_compat.endpoint import DEFAULT_BASE_URL, check_server_kind

    assert check_server_kind(None, DEFAULT_BASE_URL) == "openai"
    assert OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1").server_kind is None
    # the older setting's values name the same kinds
    assert OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1",
                           guided_decoding="vllm").server_kind == "vllm"


def test_the_settings_take_a_server_kind_per_endpoint_and_its_older_name() -> None:
    from pydantic import ValidationError

    from adapt.service.model_factory import endpoint_list
    from adapt.settings import LLMEndpointSetting, Settings

    settings = Settings(llm_endpoints=[
        {"base_url": "http://10.0.0.5:8000/v1", "server_kind": "vllm"},
        {"base_url": "http://10.0.0.6:8080/v1", "guided_decoding": "llama.cpp"}],
        openai_base_url="http://10.0.0.7/v1", openai_server_kind="openai")
    kinds = [e.server_kind for e in endpoint_list(settings, operator=False).endpoints]
    assert kinds == ["openai", "vllm", "llama.cpp"]
    with pytest.raises(ValidationError, match="disagree"):
        LLMEndpointSetting(base_url="http://10.0.0.5/v1", server_kind="vllm",
                           guided_decoding="llama.cpp")
    with pytest.raises(ValidationError, match="server_kind"):
        LLMEndpointSetting(base_url="http://10.0.0.5/v1", server_kind="tgi")  # type: ignore[arg-type]


# -- recording and replay ----------------------------------------------------------------------
def test_the_fingerprint_covers_tools_and_keeps_older_requests_fingerprints() -> None:
    plain = ChatRequest(messages=[Message(role="system", content="s"),
                                  Message(role="user", content="craft a stick")],
                        stop=["\n"], max_tokens=17, temperature=0.5, seed=7)
    # computed before requests had tool fields: stored calls still replay
    assert request_fingerprint(plain) == (
        "2dd8a355f092dd40b2e65d1c95cc723f2019ad01717538b3b2286981b8c67cb2")
    assert request_fingerprint(ChatRequest(prompt="hello", max_tokens=5)) == (
        "1bcea25caa364bc39c1538d1ca85d3b2a16d35587b5a27f680553a482a6b0c68")
    with_tools = plain.model_copy(update={"tools": [GET]})
    other_tools = plain.model_copy(update={"tools": [GET, GET]})
    schema = plain.model_copy(update={"json_schema": SCHEMA})
    prints = {request_fingerprint(r) for r in (plain, with_tools, other_tools, schema)}
    assert len(prints) == 4
    assert request_diff(with_tools, other_tools) == ["tools differ"]
    calls = ChatRequest(messages=conversation(), tools=[GET])
    moved = conversation()
    moved[3] = moved[3].model_copy(update={"tool_call_id": "call_9"})
    changed = calls.model_copy(update={"messages": moved})
    assert request_fingerprint(calls) != request_fingerprint(changed)
    assert request_diff(calls, changed) == [
        "messages[3]: the tool calls or the call answered differ"]


async def test_a_tool_calling_call_is_recorded_and_replayed_with_its_calls() -> None:
    live = ScriptedModel([tool_call("get", {"item": "stick", "count": 2}),
                          [tool_call("inventory"), tool_call("task_completed", {})]])
    recorder = RecordingModel(live)
    request = ChatRequest(messages=conversation(), tools=[GET])
    first = await recorder.complete(request)
    second = await recorder.complete(request)
    assert first.tool_calls is not None and first.tool_calls[0].name == "get"
    assert json.loads(first.tool_calls[0].arguments) == {"item": "stick", "count": 2}
    assert [c.name for c in second.tool_calls or ()] == ["inventory", "task_completed"]
    assert len({c.id for c in second.tool_calls or ()}) == 2  # ids unique per answer
    assert first.finish_reason == "tool_calls" and first.usage.completion_tokens > 0

    stored = Recording.model_validate_json(recorder.recording.model_dump_json())
    replay = ReplayModel(stored)
    assert (await replay.complete(request)).tool_calls == first.tool_calls
    assert (await replay.complete(request)).tool_calls == second.tool_calls
    # a request with other tools is not the recorded call
    replay = ReplayModel(stored)
    with pytest.raises(ReplayDivergence, match="tools differ"):
        await replay.complete(request.model_copy(update={"tools": [GET, GET]}))


async def test_a_function_model_answers_with_tool_calls_too() -> None:
    model = FunctionModel(lambda r: tool_call("get", {"n": len(r.tools or [])})
                          if r.tools else "text")
    assert (await model.complete(ChatRequest(prompt="x"))).text == "text"
    answer = await model.complete(ChatRequest(prompt="x", tools=[GET]))
    assert answer.tool_calls == [ToolCall(id="call_2_0", name="get", arguments='{"n": 1}')]
    bad = FunctionModel(lambda r: 3)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="not str or tool calls"):
        await bad.complete(ChatRequest(prompt="x"))


async def test_the_tools_executor_over_an_openai_compatible_server(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    """A whole task: the server captures each ``tools`` request and answers ``tool_calls``."""
    from adapt.engine import MemorySink, RunConfig, run_task
    from adapt.envs.textcraft import TextCraft

    def call(i: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"id": f"srv_{i}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}

    fake_server.responses = [
        ok_chat("I need logs first.", tool_calls=[call(1, "get", {"item": "oak logs",
                                                                  "count": 1})],
                finish_reason="tool_calls"),
        ok_chat(None, tool_calls=[call(2, "craft", {
            "item": "oak planks", "count": 4, "ingredients": [{"item": "oak logs",
                                                               "count": 1}]})],
                finish_reason="tool_calls"),
    ]
    model = OpenAIChatModel("gpt-test", base_url=local_url, http_client=fake_server.client())
    sink = MemorySink()
    result = await run_task(TextCraft(), {"goal": "craft oak planks"},
                            RunConfig(strategy="react", d_max=1, executor={"kind": "tools"}),
                            model, sink=sink)
    assert result.status == "succeeded"
    first, second = fake_server.bodies
    assert [t["function"]["name"] for t in first["tools"]] == [
        "get", "craft", "inventory", "task_completed", "task_failed"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["item", "count"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert second["messages"][2] == {
        "role": "assistant", "content": "I need logs first.",
        "tool_calls": [call(1, "get", {"item": "oak logs", "count": 1})]}
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "srv_1",
                                     "content": "Got 1 oak logs"}
    steps = sink.steps[1]
    assert [s.text for s in steps] == ["get 1 oak logs", "craft 4 oak planks using 1 oak logs"]
    assert steps[0].extra is not None and steps[0].extra["thought"] == "I need logs first."
    assert [c.tool_calls[0]["id"] for c in sink.calls if c.tool_calls] == ["srv_1", "srv_2"]
    assert sink.calls[0].prompt_tokens == 11 and not sink.calls[0].usage_estimated
