"""The TextCraft StateFlow machine on real games, and StateFlow as ADaPT's executor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateflow import Machine, register_machine, unregister_machine
from adapt.envs.textcraft import TextCraft
from adapt.envs.textcraft.solver import solve
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel, ScriptedModel
from tests.engine.toy import ToyEnv


def state_of(request: ChatRequest) -> str:
    prompt = request.as_prompt()
    if request.role == "check":
        return "check"
    return prompt.split("## Current step: ", 1)[1].split("\n", 1)[0]


def follower(env: TextCraft, mistakes: list[str]) -> FunctionModel:
    """Plans, makes the given mistakes first, then plays the solver's next action."""

    def fn(request: ChatRequest) -> str:
        state = state_of(request)
        if state == "check":
            return "yes"
        if state == "Plan":
            return "think: I will fetch the logs, then craft planks, sticks and the goal."
        if mistakes:
            return mistakes.pop(0)
        return solve(env)[0]

    return FunctionModel(fn)


async def test_textcraft_machine_crafts_the_goal_end_to_end() -> None:
    env = TextCraft()
    sink = MemorySink()
    model = follower(env, ["get 2 dark oak planks"])
    config = RunConfig(d_max=1, executor={"kind": "stateflow"})
    result = await run_task(env, {"goal": "craft dark oak sign"}, config, model, sink=sink)
    assert result.success and result.reward == 1.0
    assert sink.nodes[1].termination == "reward"
    steps = sink.steps[1]
    states = [s.extra["state"] for s in steps if s.extra]
    assert states[:4] == ["Plan", "Plan", "Gather", "Error"]
    assert steps[0].text == "inventory" and steps[0].raw == ""  # no model call
    assert steps[1].kind == "thought" and steps[1].observation == "OK."
    assert steps[2].observation.startswith("Could not find")
    assert steps[2].extra and steps[2].extra["transition"] == "Error"
    assert "Craft" in states and steps[-1].extra and steps[-1].extra["stopped"] == "done"
    assert steps[-1].text.startswith("craft") and steps[-1].done
    prompts = {state_of(r): r.as_prompt() for r in model.requests}
    assert "## Current step: Plan" in prompts["Plan"]
    assert "Your last action failed: Could not find" in prompts["Error"]
    assert "Goal: craft dark oak sign" in prompts["Gather"]
    assert all(r.stop == ["\n"] for r in model.requests)


async def test_textcraft_sub_goal_is_verified_by_a_model_check() -> None:
    env = TextCraft()
    sink = MemorySink()
    model = ScriptedModel([
        "think: I need 2 dark oak logs and have none.",
        "get 2 dark oak logs",
        "think: I fetched them. Task completed!",
        "no",  # Verify's check: not convinced -> Craft
        "think: Task completed!",
        "yes",
    ])
    # the machine's own model check is the subject: environment verification (which would
    # confirm the held logs right after "get") is off
    config = RunConfig(strategy="stateflow", executor={"kind": "stateflow"},
                       verification="off")
    result = await run_task(env, {"goal": "craft dark oak sign"}, config, model,
                            goal="fetch 2 dark oak logs", sink=sink)
    assert result.success and result.reward == 0.0
    root = sink.nodes[1]
    assert root.termination == "completed" and root.self_assessed is True
    assert root.context_out is not None and "dark oak log" in root.context_out
    visits = [(s.extra["state"], s.extra.get("transition")) for s in sink.steps[1] if s.extra]
    assert visits == [("Plan", None), ("Plan", "Gather"), ("Gather", "Gather"),
                      ("Gather", "Verify"), ("Verify", "Craft"), ("Craft", "Verify"),
                      ("Verify", "End")]
    checks = sink.steps[1][4].extra["checks"]  # type: ignore[index]
    assert checks[0]["answer"] == "no" and checks[0]["to"] == "End"
    check = model.requests[3]
    assert check.role == "check" and check.max_tokens == 8
    assert "Question: Does the inventory show that the task above is achieved?" in (
        check.prompt or "")
    assert "> inventory\nInventory: [dark oak logs] (2) \n\nQuestion:" in (check.prompt or "")
    assert [c.role for c in sink.calls] == ["executor"] * 3 + ["check", "executor", "check"]


async def test_the_model_giving_up_is_a_failure_final_state() -> None:
    env = TextCraft()
    model = ScriptedModel(["think: This is impossible. Task failed!"])
    sink = MemorySink()
    config = RunConfig(d_max=1, executor={"kind": "stateflow"})
    result = await run_task(env, {"goal": "craft dark oak sign"}, config, model, sink=sink)
    assert not result.success and sink.nodes[1].termination == "failed"
    assert sink.nodes[1].self_assessed is False
    assert sink.steps[1][-1].extra == {"state": "Plan", "turn": 1, "transition": "Fail"}


# -- ADaPT with the stateflow executor ----------------------------------------------------------
TOY_MACHINE = Machine.model_validate({
    "name": "toy",
    "initial": "Act",
    "max_turns": 3,
    "on_max_turns": "GaveUp",
    "action_regex": None,
    "stop": ["\n"],
    "history": {"model": "> $action\n", "action": "> $action\n",
                "observation": "$observation\n"},
    "states": {
        "Act": {"instruction": "TOY $state\n$task\n$context\n$trajectory> ",
                "outputs": ["model", "act"],
                "transitions": [
                    {"to": "Done", "when": {"source": "observation", "startswith": "Did"}},
                    {"to": "GaveUp", "when": {"source": "action", "contains": "give up"}},
                ]},
        "Done": {"final": "success"},
        "GaveUp": {"final": "failure"},
    },
})


@pytest.fixture
def toy_machine() -> Iterator[None]:
    register_machine("toy", TOY_MACHINE)
    yield
    unregister_machine("toy")


@pytest.mark.usefixtures("toy_machine")
async def test_adapt_decomposes_when_the_machine_fails(env: ToyEnv) -> None:
    sink = MemorySink()
    executor = ScriptedModel(["give up", "ok a", "ok b"])
    planner = ScriptedModel(["Step 1: do a\nStep 2: do b\nExecution Order: Step 1 AND Step 2"])
    config = RunConfig(d_max=2, executor={"kind": "stateflow"})
    result = await run_task(env, {"goal": "root goal"}, config, executor, planner, sink=sink)
    assert result.success and result.nodes == 3 and result.max_depth == 2
    assert [(n.id, n.termination, n.status) for n in sorted(sink.nodes.values(),
                                                             key=lambda n: n.id)] == [
        (1, "failed", "succeeded"), (2, "completed", "succeeded"), (3, "completed", "succeeded")]
    assert sink.steps[1][0].extra == {"state": "Act", "turn": 1, "transition": "GaveUp"}
    assert sink.steps[3][0].extra == {"state": "Act", "turn": 1, "transition": "Done"}
    # one machine run per node, each from the initial state, with the propagated context
    assert executor.prompts[2] == "TOY Act\nGoal: do b.\nDone: a\n> "


@pytest.mark.usefixtures("toy_machine")
async def test_machine_turn_limit_inside_adapt(env: ToyEnv) -> None:
    sink = MemorySink()
    executor = ScriptedModel(["nope", "nope", "nope"])
    config = RunConfig(d_max=1, executor={"kind": "stateflow"})
    result = await run_task(env, {"goal": "g"}, config, executor, sink=sink)
    assert not result.success and sink.nodes[1].termination == "max_turns"
    assert executor.prompts[-1].endswith("> nope\nNothing happens.\n> nope\nNothing happens.\n> ")
    assert sink.steps[1][-1].extra == {"state": "Act", "turn": 3, "transition": "GaveUp",
                                       "stopped": "max_turns"}


async def test_adapt_on_textcraft_with_the_stateflow_executor() -> None:
    env = TextCraft()
    sink = MemorySink()

    def fn(request: ChatRequest) -> str:
        state = state_of(request)
        prompt = request.as_prompt()
        if state == "check":
            return "yes"
        if state == "Plan":
            if "Goal: craft dark oak sign" in prompt and "Inventory: You are not" in prompt:
                return "think: Too much for one go. Task failed!"  # the root
            return "think: Let me plan the counts."
        if "Goal: fetch 2 dark oak logs" in prompt:
            return "think: Task completed!" if "Got 2" in prompt else "get 2 dark oak logs"
        return solve(env)[0]

    planner = ScriptedModel(["Step 1: fetch 2 dark oak logs\nStep 2: craft dark oak sign\n"
                             "Execution Order: Step 1 AND Step 2"])
    executor = FunctionModel(fn)
    config = RunConfig(d_max=2, executor={"kind": "stateflow"})
    result = await run_task(env, {"goal": "craft dark oak sign"}, config, executor, planner,
                            sink=sink)
    assert result.nodes == 3
    terminations = {n.goal: n.termination for n in sink.nodes.values()}
    # the environment confirms the held logs right after "get" (verification ends the run)
    assert terminations["fetch 2 dark oak logs"] == "verified"
    fetch = next(n for n in sink.nodes.values() if n.goal == "fetch 2 dark oak logs")
    assert fetch.claim is None and fetch.verdict == "confirmed"
    assert fetch.evidence == "holds 2 of 2 dark oak logs"
    assert sink.nodes[1].termination == "failed"
    assert result.reward == 1.0 and result.success
