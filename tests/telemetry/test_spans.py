"""The span model (no exporter): a task's events in, a span tree that mirrors the decomposition
tree out, in the GenAI semantic conventions, with ids that do not depend on the run."""

from __future__ import annotations

import asyncio
import json

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.events import FanoutSink, NodeCreated, NodeUpdated, flush
from adapt.engine.tree import Node
from adapt.envs.textcraft import TextCraft
from adapt.sim import from_spec
from adapt.telemetry.semconv import TaskInfo
from adapt.telemetry.sink import OtelSink
from adapt.telemetry.spans import SpanRecord, TraceBuilder, span_id, trace_id

SIM = "sim:textcraft?capability=1"
INFO = TaskInfo(task_id="t-11", tenant="acme", environment="textcraft", strategy="adapt", d_max=4,
                profile="default", executor_kind="react", executor_model=SIM, planner_model=SIM)


async def traced_run(*, content: bool = False) -> tuple[MemorySink, list[SpanRecord]]:
    spans: list[SpanRecord] = []
    memory = MemorySink()
    sink = OtelSink(TraceBuilder(INFO, content=content), spans.extend)
    await run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4), from_spec(SIM),
                   sink=FanoutSink([memory, sink]))
    return memory, spans


async def test_the_span_tree_mirrors_the_decomposition_tree() -> None:
    memory, spans = await traced_run()
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans), "a span was emitted twice"
    assert {s.trace_id for s in spans} == {trace_id("t-11")}
    (root,) = [s for s in spans if s.parent_id is None]
    assert root.name == "invoke_workflow adapt" and root.span_id == span_id("t-11", "task")
    a = root.attributes
    assert a["gen_ai.operation.name"] == "invoke_workflow"
    assert a["gen_ai.workflow.name"] == "adapt" and a["gen_ai.conversation.id"] == "t-11"
    assert (a["adapt.environment"], a["adapt.d_max"], a["adapt.profile"], a["adapt.tenant"]) == (
        "textcraft", 4, "default", "acme")
    assert a["adapt.task.status"] == "succeeded" and a["openinference.span.kind"] == "CHAIN"

    node_spans = {s.attributes["adapt.node.id"]: s for s in spans
                  if s.name.startswith(("invoke_agent", "and group", "or group"))}
    assert set(node_spans) == set(memory.nodes)
    for node in memory.nodes.values():
        span = node_spans[node.id]
        parent = root if node.parent_id is None else node_spans[node.parent_id]
        assert span.parent_id == parent.span_id, f"node {node.id} is not under its parent"
        assert parent.start_ns <= span.start_ns <= span.end_ns <= parent.end_ns
        if node.kind == "task":
            assert span.name == "invoke_agent react"
            assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
            assert span.attributes["gen_ai.agent.name"] == "react"
            assert span.attributes["openinference.span.kind"] == "AGENT"
        assert span.attributes["adapt.node.depth"] == node.depth
        assert span.attributes["adapt.node.status"] == node.status
        for field in ("claim", "verdict"):  # the executor's claim vs the environment's verdict
            assert span.attributes.get(f"adapt.node.{field}") == getattr(node, field)
    assert memory.root is not None and node_spans[memory.root.id].parent_id == root.span_id

    plans = {s.attributes["adapt.node.id"]: s for s in spans if s.name == "plan react"}
    decomposed = {n.id: n for n in memory.nodes.values() if n.plan is not None}
    assert set(plans) == set(decomposed) and plans
    for node_id, plan in plans.items():
        node = decomposed[node_id]
        assert node.plan is not None and plan.parent_id == node_spans[node_id].span_id
        assert plan.attributes["gen_ai.operation.name"] == "plan"
        assert plan.attributes["adapt.plan.expression"] == node.plan.expression_text
        assert plan.attributes["adapt.plan.steps"] == len(node.plan.steps)

    calls = {s.attributes["adapt.llm.call_id"]: s for s in spans if s.kind == "client"}
    assert set(calls) == {c.id for c in memory.calls}
    for call in memory.calls:
        span = calls[call.id]
        assert call.node_id is not None
        holder = plans[call.node_id] if call.role == "planner" else node_spans[call.node_id]
        assert span.parent_id == holder.span_id
        assert span.name == f"text_completion {call.model}"
        assert span.attributes["gen_ai.provider.name"] == "adapt.sim"
        assert span.attributes["gen_ai.usage.input_tokens"] == call.prompt_tokens
        assert span.attributes["gen_ai.usage.output_tokens"] == call.completion_tokens
        assert span.attributes["gen_ai.request.model"] == call.model
        assert span.attributes["openinference.span.kind"] == "LLM"
        assert span.end_ns - span.start_ns == int(call.latency_s * 1e9)

    tools = [s for s in spans if s.name == "execute_tool textcraft"]
    actions = [st for steps in memory.steps.values() for st in steps if st.kind == "action"]
    assert len(tools) == len(actions) > 0
    for step in actions:
        (span,) = [t for t in tools if t.attributes["gen_ai.tool.call.id"]
                   == f"{step.node_id}.{step.index}"]
        assert span.parent_id == node_spans[step.node_id].span_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["openinference.span.kind"] == "TOOL"
    assert len(spans) == 1 + len(memory.nodes) + len(plans) + len(calls) + len(tools)


async def test_prompts_and_completions_only_when_the_operator_opts_in() -> None:
    secret = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
              "gen_ai.tool.call.result", "llm.input_messages.0.message.content")
    _, plain = await traced_run()
    assert not [k for s in plain for k in s.attributes if k in secret]
    memory, full = await traced_run(content=True)
    first = next(s for s in full if s.attributes.get("adapt.llm.call_id") == 1)
    (message,) = json.loads(first.attributes["gen_ai.input.messages"])
    assert message["role"] == "user" and message["parts"][0]["content"] == memory.calls[0].prompt
    (answer,) = json.loads(first.attributes["gen_ai.output.messages"])
    assert answer["parts"][0]["content"] == memory.calls[0].completion
    tool = next(s for s in full if s.name.startswith("execute_tool"))
    assert tool.attributes["gen_ai.tool.call.result"]


async def test_ids_depend_on_the_task_and_what_a_span_stands_for_only() -> None:
    _, once = await traced_run()
    _, again = await traced_run()
    assert [(s.span_id, s.parent_id, s.name) for s in once] == [
        (s.span_id, s.parent_id, s.name) for s in again]


async def test_spans_wait_for_the_background_write_of_their_events() -> None:
    """Before an LLM call the database sink writes in the background (``flush_soon``): the
    spans its events ended go only once that write landed, and not at all when it failed (the
    attempt that stores those events sends them)."""
    loop = asyncio.get_running_loop()
    for outcome in ("lands", "fails"):
        write: asyncio.Future[None] = loop.create_future()
        sent: list[SpanRecord] = []
        sink = OtelSink(TraceBuilder(INFO), sent.extend, writing=lambda w=write: w)
        await sink.emit(NodeCreated(node=Node(id=1, goal="craft a stick")))
        await sink.emit(NodeUpdated(node=Node(id=1, goal="craft a stick", status="succeeded",
                                              success=True)))
        await flush(sink, soon=True)  # the engine's flush before an LLM call
        await asyncio.sleep(0)
        assert sent == [], "sent before its events were stored"
        if outcome == "lands":
            write.set_result(None)
        else:
            write.set_exception(RuntimeError("lease lost"))
            write.exception()
        await asyncio.sleep(0)
        assert [s.name for s in sent] == (["invoke_agent react"] if outcome == "lands" else [])
