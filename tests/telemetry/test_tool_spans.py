"""The tools executor in a trace: each tool call is an ``execute_tool {tool}`` span under its
node (self-assessment calls too), and with content on, the model's calls and the results
it was sent are message parts of the GenAI conventions."""

from __future__ import annotations

import json

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.events import FanoutSink
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel, tool_call
from adapt.telemetry.semconv import TaskInfo
from adapt.telemetry.sink import OtelSink
from adapt.telemetry.spans import SpanRecord, TraceBuilder

INFO = TaskInfo(task_id="t-tools", tenant="acme", environment="textcraft", strategy="react",
                d_max=1, profile="default", executor_kind="tools", executor_model="scripted",
                planner_model="scripted")
GET = tool_call("get", {"item": "oak logs", "count": 1})
CRAFT = tool_call("craft", {"item": "oak planks", "count": 4,
                            "ingredients": [{"item": "oak logs", "count": 1}]})


async def traced(*, content: bool) -> tuple[MemorySink, list[SpanRecord]]:
    spans: list[SpanRecord] = []
    memory = MemorySink()
    model = ScriptedModel([tool_call("fly"), GET, CRAFT])
    await run_task(TextCraft(), {"goal": "craft oak planks"},
                   RunConfig(strategy="react", d_max=1, executor={"kind": "tools"}), model,
                   sink=FanoutSink([memory, OtelSink(TraceBuilder(INFO, content=content),
                                                     spans.extend)]))
    return memory, spans


async def test_each_tool_call_is_a_span_named_after_its_tool() -> None:
    memory, spans = await traced(content=False)
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert [s.name for s in tools] == ["execute_tool fly", "execute_tool get",
                                       "execute_tool craft"]
    node = next(s for s in spans if s.name == "invoke_agent tools")
    for span, step in zip(tools, memory.steps[1], strict=True):
        assert span.parent_id == node.span_id
        assert span.attributes["gen_ai.tool.name"] == span.name.split()[-1]
        assert span.attributes["gen_ai.tool.type"] == "function"
        assert span.attributes["gen_ai.tool.call.id"] == (step.extra or {})["tool"]["id"]
        assert "gen_ai.tool.call.arguments" not in span.attributes
    assert tools[0].error is not None and "there is no tool 'fly'" in tools[0].error
    chats = [s for s in spans if s.kind == "client"]
    assert [s.name for s in chats] == ["chat scripted"] * 3


async def test_with_content_the_calls_and_results_are_message_parts() -> None:
    _, spans = await traced(content=True)
    get = next(s for s in spans if s.name == "execute_tool get")
    assert json.loads(get.attributes["gen_ai.tool.call.arguments"]) == {
        "item": "oak logs", "count": 1}
    assert get.attributes["gen_ai.tool.call.result"] == "Got 1 oak logs"
    assert get.attributes["adapt.step.action"] == "get 1 oak logs"
    last = [s for s in spans if s.kind == "client"][-1]
    (answer,) = json.loads(last.attributes["gen_ai.output.messages"])
    assert answer["parts"] == [{"type": "tool_call", "id": "call_3_0", "name": "craft",
                                "arguments": CRAFT.arguments}]
    sent = json.loads(last.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant",
                                         "tool"]
    assert sent[-1]["parts"] == [{"type": "tool_call_response", "id": "call_2_0",
                                  "response": "Got 1 oak logs"}]
    assert sent[-2]["parts"][0]["type"] == "tool_call"
    names = [t["function"]["name"] for t in json.loads(
        last.attributes["gen_ai.tool.definitions"])]
    assert names == ["get", "craft", "inventory", "task_completed", "task_failed"]
