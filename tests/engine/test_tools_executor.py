"""The tools executor (``executor.kind: "tools"``) with scripted models: the request it sends
(tools, messages), each tool call as a step, the self-assessment tools under the
environment's verdict, calls the environment cannot take, the budget, and ADaPT over it."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.tools import DEFAULT_MAX_TOKENS, NO_CALL
from adapt.engine.tree import TaskResult
from adapt.envs.calculator import Calculator
from adapt.envs.textcraft import TextCraft
from adapt.envs.tools import ActionTool, ToolActions, ToolSpec, arguments
from adapt.errors import UserError
from adapt.llm.testing import Answer, ScriptedModel, tool_call
from tests.engine.toy import ToyEnv
from tests.support.toolruns import check_calls_became_actions, every_tool, run_tools

PLANKS = {"goal": "craft oak planks"}
GET_LOGS = tool_call("get", {"item": "oak logs", "count": 1})
CRAFT_PLANKS = tool_call("craft", {"item": "oak planks", "count": 4,
                                   "ingredients": [{"item": "oak logs", "count": 1}]})


async def run(replies: list[Answer], config: dict[str, Any] | None = None, *,
              env: Any = None, env_config: dict[str, Any] | None = None,
              strategy: str = "react", d_max: int = 1, **executor: Any
              ) -> tuple[TaskResult, MemorySink, ScriptedModel]:
    sink = MemorySink()
    model = ScriptedModel(replies)
    cfg = RunConfig(strategy=strategy, d_max=d_max, executor={"kind": "tools", **executor},
                    **(config or {}))
    result = await run_task(env or TextCraft(), env_config or PLANKS, cfg, model, sink=sink)
    return result, sink, model


async def test_a_textcraft_task_is_solved_with_tool_calls() -> None:
    result, sink, model = await run([GET_LOGS, CRAFT_PLANKS])
    assert result.status == "succeeded" and result.reward == 1.0
    steps = sink.steps[1]
    assert [s.text for s in steps] == ["get 1 oak logs", "craft 4 oak planks using 1 oak logs"]
    assert [s.observation for s in steps] == ["Got 1 oak logs", "Crafted 4 minecraft:oak_planks"]
    assert [s.kind for s in steps] == ["action", "action"] and steps[1].done
    assert steps[0].extra == {"tool": {"id": "call_1_0", "name": "get",
                                       "arguments": {"item": "oak logs", "count": 1}}}
    assert json.loads(steps[0].raw) == {"name": "get", "arguments": GET_LOGS.arguments}

    first, second = model.requests
    assert [t["function"]["name"] for t in first.tools or ()] == [
        "get", "craft", "inventory", "task_completed", "task_failed"]
    assert first.max_tokens == DEFAULT_MAX_TOKENS and first.role == "executor"
    system, user = first.messages or []
    assert system.role == "system" and "calling its tools" in system.content
    assert TextCraft.description in system.content and "task_completed" in system.content
    assert user.content.startswith("Crafting commands:") and "Goal: craft oak planks." in user.content
    # the second request carries the first call and its result
    assert [m.role for m in second.messages or ()] == ["system", "user", "assistant", "tool"]
    assert (second.messages or [])[2].tool_calls == [GET_LOGS.model_copy(update={"id": "call_1_0"})]
    assert (second.messages or [])[3].content == "Got 1 oak logs"
    assert (second.messages or [])[3].tool_call_id == "call_1_0"
    # every call is recorded with the tools it offered and the calls it got
    assert [c.tool_calls[0]["name"] for c in sink.calls if c.tool_calls] == ["get", "craft"]
    assert sink.calls[0].tools == first.tools and sink.calls[0].messages is not None


async def test_task_completed_is_a_claim_the_environment_checks() -> None:
    done = tool_call("task_completed", {"summary": "I made the planks."})
    result, sink, _ = await run([GET_LOGS, done])
    # the claim after fetching the logs ends the executor run, and the environment (no planks
    # yet) turns it into a failure
    root = sink.nodes[1]
    assert root.claim is True and root.verdict == "refuted" and root.success is False
    assert sink.steps[1][-1].kind == "thought"
    assert sink.steps[1][-1].text == "task_completed: I made the planks."
    assert result.status == "failed"

    # with verification off, the claim ends the node; the task's final check still refutes
    result, sink, _ = await run([done], {"verification": "off"})
    assert sink.nodes[1].termination == "completed" and sink.nodes[1].claim is True
    assert result.claimed_success is True and result.verdict == "refuted"
    assert result.status == "failed"

    result, sink, _ = await run([tool_call("task_failed", {"reason": "no logs"})])
    assert result.status == "failed" and sink.nodes[1].termination == "failed"
    assert sink.steps[1][0].text == "task_failed: no logs"


async def test_without_self_assessment_only_the_environment_ends_the_run() -> None:
    _, sink, model = await run([tool_call("task_completed"), GET_LOGS, CRAFT_PLANKS],
                               self_assessment="off")
    assert [t["function"]["name"] for t in model.requests[0].tools or ()] == [
        "get", "craft", "inventory"]
    first = sink.steps[1][0]
    assert first.error is not None and "there is no tool 'task_completed'" in first.error
    assert sink.nodes[1].success and sink.nodes[1].termination == "reward"


async def test_calls_the_environment_cannot_take_are_reported_to_the_model() -> None:
    replies: list[Answer] = [
        tool_call("fly", {}),
        tool_call("get", '{"item": "oak logs", '),
        tool_call("get", {"item": "oak logs", "count": "one"}),
        "I will now fetch the logs.",
        GET_LOGS, CRAFT_PLANKS,
    ]
    result, sink, model = await run(replies)
    assert result.status == "succeeded"
    steps = sink.steps[1]
    assert [s.kind for s in steps] == ["action", "action", "action", "thought", "action",
                                       "action"]
    assert "there is no tool 'fly'" in (steps[0].error or "")
    assert "not valid JSON" in (steps[1].error or "")
    assert steps[1].extra is not None and steps[1].extra["tool"]["arguments"] == (
        '{"item": "oak logs", ')
    assert "count: 'one' is not of type 'integer'" in (steps[2].error or "")
    assert steps[0].observation.startswith("Error: ") and steps[0].text == ""
    assert steps[3].observation == NO_CALL and steps[3].text == "I will now fetch the logs."
    # the model saw each error as the call's result, and the reminder as a user message
    fourth = model.requests[3].messages or []
    assert [m.role for m in fourth[2:]] == ["assistant", "tool", "assistant", "tool",
                                            "assistant", "tool"]
    assert fourth[3].content == steps[0].observation
    fifth = model.requests[4].messages or []
    assert (fifth[-2].role, fifth[-2].content) == ("assistant", "I will now fetch the logs.")
    assert (fifth[-1].role, fifth[-1].content) == ("user", NO_CALL)


async def test_bad_calls_count_toward_patience() -> None:
    result, sink, _ = await run([tool_call("fly")] * 3, patience=3)
    assert result.status == "failed" and sink.nodes[1].termination == "patience"


async def test_several_calls_in_one_answer_cost_one_step_and_stop_at_the_end() -> None:
    both = [GET_LOGS, CRAFT_PLANKS, tool_call("inventory")]
    result, sink, model = await run([both], max_steps=1)
    assert result.status == "succeeded"
    # the craft ended the episode: the inventory call after it was not taken
    assert [s.text for s in sink.steps[1]] == ["get 1 oak logs",
                                               "craft 4 oak planks using 1 oak logs"]
    assert len(model.requests) == 1

    result, sink, model = await run([[GET_LOGS, tool_call("inventory")], CRAFT_PLANKS],
                                    max_steps=2)
    assert result.status == "succeeded" and len(sink.steps[1]) == 3
    assert [m.role for m in (model.requests[1].messages or [])] == [
        "system", "user", "assistant", "tool", "tool"]

    result, sink, _ = await run([[GET_LOGS, tool_call("inventory")]], max_steps=1)
    assert sink.nodes[1].termination == "max_steps" and len(sink.steps[1]) == 2


async def test_adapt_decomposes_with_the_tools_executor() -> None:
    """ADaPT over the tools executor: the executor fails, the planner plans, each sub-task runs
    with the tools and hands its inventory on in the user message."""
    plan = ("Step 1: fetch 1 oak logs\nStep 2: craft 4 oak planks using 1 oak logs\n"
            "Execution Order: (Step 1 AND Step 2)")
    replies: list[Answer] = [tool_call("task_failed", {"reason": "too hard"}), plan,
                             GET_LOGS, CRAFT_PLANKS]
    result, _, model = await run(replies, strategy="adapt", d_max=2)
    assert result.status == "succeeded" and result.max_depth == 2
    assert model.requests[1].tools is None and model.requests[1].role == "planner"
    craft_request = model.requests[3]
    assert "Inventory: [oak logs] (1)" in (craft_request.messages or [])[1].content


async def test_an_environment_without_tools_is_refused_with_a_hint() -> None:
    with pytest.raises(UserError, match=r"declares none .* react"):
        await run(["x"], env=ToyEnv(), env_config={})


async def test_an_environment_tool_named_like_the_assessment_is_refused() -> None:
    class Clashing(ToolActions, ToyEnv):
        action_tools: ClassVar[tuple[ActionTool, ...]] = (
            ActionTool(ToolSpec("task_completed", "Win.", arguments({})), "win"),)

    with pytest.raises(UserError, match="task_completed, which the tools executor offers"):
        await run(["x"], env=Clashing(), env_config={})


@pytest.mark.parametrize(("make", "config"), [(TextCraft, {"seed": 3}),
                                              (Calculator, {"index": 2})],
                         ids=["textcraft", "calculator"])
async def test_every_tool_of_a_built_in_environment_runs_through_the_executor(
    make: Any, config: dict[str, Any]
) -> None:
    calls = every_tool(make(), config)
    result, sink, model = await run_tools(make(), config, [*calls, tool_call("task_failed")])
    assert result.error is None and model.remaining == 0
    assert [(s.extra or {})["tool"]["name"] for s in sink.steps[1]] == [
        *(c.name for c in calls), "task_failed"]
    assert sink.nodes[1].termination == "failed"
    check_calls_became_actions(make, config, sink)


async def test_the_calculator_is_solved_with_its_tools() -> None:
    from adapt.envs.calculator.problems import PROBLEMS

    answer = PROBLEMS[0].answer
    result, sink, _ = await run_tools(Calculator(), {"index": 0}, [
        tool_call("calculator", {"expression": "1 + 1"}),
        tool_call("answer", {"value": answer})])
    assert result.status == "succeeded" and sink.steps[1][-1].text == f"answer {answer}"
