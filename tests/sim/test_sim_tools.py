"""The simulator with tools and JSON plans: a tools conversation is read as the text executor
prompt it stands for and answered with the tool call of the same policy; TextCraft runs
offline with the tools executor under ADaPT (labelled simulated), in process and through the
simulator's OpenAI-compatible server; a planner asked for JSON answers with a JSON plan."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.llm import ChatRequest, Message, OpenAIChatModel, ToolCall
from adapt.llm.openai_compat.pool import ClientPool
from adapt.sim import SimTextCraftModel, from_spec
from adapt.sim.server import background_server, create_app
from adapt.sim.structured import json_plan, text_prompt, tool_call_of

SIM = "sim:textcraft?capability=1"
TOOLS = [t.function_schema() for t in TextCraft().tools()]
TASK = "Crafting commands:\ncraft 4 oak planks using 1 oak logs\n\nGoal: craft oak planks."


def test_a_tools_conversation_reads_as_the_text_prompt_it_stands_for() -> None:
    request = ChatRequest(tools=TOOLS, messages=[
        Message(role="system", content="You act through tools."),
        Message(role="user", content=TASK),
        Message(role="assistant", content="", tool_calls=[ToolCall(
            id="a", name="get", arguments='{"item": "oak logs", "count": 1}')]),
        Message(role="tool", content="Got 1 oak logs", tool_call_id="a"),
        Message(role="assistant", content="I craft now"),
        Message(role="user", content="No tool was called."),
    ])
    assert text_prompt(request) == (
        f"{TASK}\n> get 1 oak logs\nGot 1 oak logs\n> I craft now\nNo tool was called.\n> ")


@pytest.mark.parametrize(("line", "call"), [
    ("get 3 honeycomb", ("get", {"item": "honeycomb", "count": 3})),
    ("craft 4 stick using 2 oak planks",
     ("craft", {"item": "stick", "count": 4, "ingredients": [{"item": "oak planks", "count": 2}]})),
    ("inventory", ("inventory", {})),
    ("think: I have it. Task completed!", ("task_completed", {"summary": "I have it. Task completed!"})),
    ("think: I am stuck. Task failed!", ("task_failed", {"reason": "I am stuck. Task failed!"})),
    ("get 2 bamboo craft 1 stick using 2 bamboo", None),  # two actions: written as text
    ("> get 2 bamboo", None),  # a stray prefix
    ("think: what next?", None),
])
def test_the_policys_lines_become_tool_calls(line: str, call: tuple[str, object] | None) -> None:
    found = tool_call_of(line, 4)
    if call is None:
        assert found is None
    else:
        assert found is not None and found.id == "call_4"
        assert (found.name, json.loads(found.arguments)) == call


async def test_the_simulator_answers_a_tools_request_with_a_tool_call() -> None:
    model = SimTextCraftModel()
    request = ChatRequest(tools=TOOLS, messages=[Message(role="user", content=TASK)])
    answer = await model.complete(request)
    assert answer.text == "" and answer.finish_reason == "tool_calls" and answer.simulated
    assert answer.tool_calls == [ToolCall(id="call_0", name="get",
                                          arguments='{"item": "oak logs", "count": 1}')]
    assert answer.usage.completion_tokens > 0
    # the tools offered count as prompt tokens, as a provider counts them
    compact = json.dumps(TOOLS, separators=(",", ":"))
    assert answer.usage.prompt_tokens == -(-len(TASK + compact) // 4)
    # the same request without tools is the text executor's: a line, no call
    plain = await model.complete(ChatRequest(prompt=f"{TASK}\n> ", stop=["\n"]))
    assert plain.text == "get 1 oak logs" and plain.tool_calls is None


async def run_adapt(model: object, seed: int) -> tuple[str, MemorySink]:
    sink = MemorySink()
    result = await run_task(TextCraft(), {"seed": seed},
                            RunConfig(strategy="adapt", d_max=4, executor={"kind": "tools"}),
                            model, sink=sink)  # type: ignore[arg-type]
    return result.status, sink


async def test_adapt_with_the_tools_executor_runs_offline_on_the_simulator() -> None:
    model = from_spec(SIM)
    statuses = [await run_adapt(model, seed) for seed in range(6)]
    assert [s for s, _ in statuses] == ["succeeded"] * 6
    _, sink = statuses[0]
    assert sink.result is not None and sink.result.max_depth >= 2  # it decomposed
    executor_calls = [c for c in sink.calls if c.role == "executor"]
    assert executor_calls and all(c.simulated and c.tools for c in executor_calls)
    assert all(c.tool_calls for c in executor_calls)
    steps = [s for steps in sink.steps.values() for s in steps]
    assert all((s.extra or {}).get("tool") for s in steps)


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with background_server(create_app()) as url:
        yield url


async def test_the_tools_executor_runs_through_the_simulators_server(sim_url: str) -> None:
    pool = ClientPool()
    try:
        model = OpenAIChatModel(SIM, base_url=sim_url, pool=pool, simulated=True)
        status, sink = await run_adapt(model, 3)
    finally:
        await pool.aclose()
    local_status, local = await run_adapt(from_spec(SIM), 3)
    assert status == local_status == "succeeded"
    # over HTTP the same calls are made and the same steps taken as in process
    assert [s.text for n in sorted(sink.steps) for s in sink.steps[n]] == [
        s.text for n in sorted(local.steps) for s in local.steps[n]]


def test_the_server_reads_tools_and_tool_messages_and_answers_tool_calls(sim_url: str) -> None:
    api = openai.OpenAI(base_url=sim_url, api_key="sim", max_retries=0, timeout=20)
    answer = api.chat.completions.create(model=SIM, tools=TOOLS, messages=[  # type: ignore[arg-type]
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x1", "type": "function",
             "function": {"name": "get", "arguments": '{"item": "oak logs", "count": 1}'}}]},
        {"role": "tool", "tool_call_id": "x1", "content": "Got 1 oak logs"}])
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.function.name == "craft" and call.id == "call_1"  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError, match="tool_call_id"):
        api.chat.completions.create(model=SIM, tools=TOOLS, messages=[  # type: ignore[arg-type]
            {"role": "user", "content": TASK}, {"role": "tool", "content": "x"}])
    with pytest.raises(openai.BadRequestError, match=r"tools\[0\]"):
        api.chat.completions.create(model=SIM, tools=[{"type": "function"}],  # type: ignore[list-item]
                                    messages=[{"role": "user", "content": TASK}])


def test_a_planner_asked_for_json_answers_with_a_json_plan(sim_url: str) -> None:
    text = ("# Think: fetch then craft.\nStep 1: fetch 1 oak logs\n"
            "Step 2: craft 4 oak planks using 1 oak logs\nExecution Order: (Step 1 AND Step 2)")
    assert json.loads(json_plan(text)) == {
        "thought": "fetch then craft.",
        "steps": ["fetch 1 oak logs", "craft 4 oak planks using 1 oak logs"],
        "execution_order": "(Step 1 AND Step 2)"}
    planner = TextCraft().prompt_template("planner").replace("$task", TASK).replace(
        "$context", "")
    api = openai.OpenAI(base_url=sim_url, api_key="sim", max_retries=0, timeout=20)
    schema = {"type": "object"}
    for extra in ({"response_format": {"type": "json_schema",
                                       "json_schema": {"name": "plan", "schema": schema}}},
                  {"extra_body": {"structured_outputs": {"json": schema}}},
                  {"extra_body": {"json_schema": schema}}):
        answer = api.chat.completions.create(
            model=SIM, messages=[{"role": "user", "content": planner}],  # type: ignore[arg-type]
            **extra)  # type: ignore[call-overload]
        plan = json.loads(answer.choices[0].message.content or "")
        assert plan["steps"][-1] == "craft 4 oak planks using 1 oak logs", extra
