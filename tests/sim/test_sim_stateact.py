"""StateAct on TextCraft: the template's demos replay on the real env, the simulator reads and
writes the StateAct format, and the StateAct executor runs with it end to end."""

from __future__ import annotations

import asyncio
import re
import string
from typing import Any

import pytest

pytest.importorskip("adapt.envs.textcraft.solver")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateact import STOP, parse_output
from adapt.envs.textcraft import TextCraft, tasks
from adapt.envs.textcraft.book import load_book
from adapt.envs.textcraft.recipes import display
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.sim import SimTextCraftModel, from_spec
from adapt.sim.prompt_parse import STATEACT_MARKER, detect_role, parse_prompt
from adapt.sim.stateact import format_inventory

SUFFIX = "\n\n$task\n$context\n"
FIELDS = ("current inventory",)
COMMANDS = frozenset(load_book().commands())
STEP = re.compile(
    r"goal: [^\n]+\ncurrent inventory: [^\n]+\nthought: [^\n]+\naction: [^\n]+\n"
    r"observation: [^\n]*"
)


def template() -> str:
    return TextCraft().prompt_template("stateact")


def env_inventory(env: TextCraft) -> str:
    return format_inventory({display(k): v for k, v in env.inventory.items()})


def header(env: TextCraft, goal: str, context: str = "") -> str:
    return string.Template(template()).safe_substitute(task=env.task_observation(goal),
                                                       context=context)


def ask(model: SimTextCraftModel, prompt: str) -> str:
    request = ChatRequest(prompt=prompt, stop=[STOP], max_tokens=384)
    return asyncio.run(model.complete(request)).text


# -- the template ----------------------------------------------------------------------------
def test_template_placeholders_marker_and_instructions() -> None:
    text = template()
    tpl = string.Template(text)
    assert tpl.is_valid() and sorted(tpl.get_identifiers()) == ["context", "task"]
    assert text.endswith(SUFFIX) and text.count("$") == 2
    assert STATEACT_MARKER in text.lower()
    for other in ("executor", "planner", "plan_and_execute", "reflection"):
        assert STATEACT_MARKER not in TextCraft().prompt_template(other).lower(), other
    intro = text.split("Crafting commands:\n", 1)[0]
    for needle in ("goal:", "current inventory:", "thought:", "action:", "observation:",
                   "Task completed!", "Task failed!", "think"):
        assert needle in intro, needle


def test_demos_replay_exactly_on_the_real_env_with_true_state_lines() -> None:
    body = template()[: -len(SUFFIX)] + "\n"
    demos = ["Crafting commands:\n" + p for p in body.split("Crafting commands:\n")[1:]]
    assert len(demos) >= 3
    env = TextCraft()
    completed_goal = False
    for demo in demos:
        head, rest = demo.split("\n\nGoal: ", 1)
        goal_line, _, tail = rest.partition("\n")
        commands, goal = head.split("\n")[1:], goal_line.rstrip(".")
        assert all(c in COMMANDS for c in commands)
        assert tail.startswith("\n")  # the empty context line
        steps = re.split(r"\n(?=goal: )", tail.strip("\n"))
        root = goal if goal.startswith("craft ") else "craft " + commands[0].split(" using ")[0][8:]
        env.reset(goal=root, commands=commands)
        result = None
        for raw in steps:
            assert STEP.fullmatch(raw), raw
            text, observation = raw.rsplit("\nobservation: ", 1)
            out = parse_output(text, FIELDS)
            assert out.warnings == [] and out.error is None and out.action is not None
            assert out.goal == goal
            assert out.state["current inventory"] == env_inventory(env), raw
            if out.is_thought:
                assert observation == "OK."
                continue
            result = env.step(out.action)
            assert result.observation == observation, raw
        last = parse_output(steps[-1].rsplit("\nobservation:", 1)[0], FIELDS)
        assert last.is_thought and last.declaration is True
        if goal == root and result is not None and result.done:
            completed_goal = True
    assert completed_goal, "no demo crafts its goal"


# -- reading the prompt ----------------------------------------------------------------------
def test_detect_role_and_parse_a_stateact_prompt() -> None:
    env = TextCraft()
    env.reset(goal="craft beehive")
    prompt = (header(env, "craft beehive", "Inventory: [honeycomb] (3) ")
              + "goal: craft beehive\ncurrent inventory: [honeycomb] (3)\nthought: t\n"
                "action: get 2 oak logs\nobservation: Got 2 oak logs\n"
                "goal: craft beehive\ncurrent inventory: x\nthought: hmm\naction: think\n"
                "observation: OK.\n"
                "goal: craft beehive\nthought: oops\nobservation: Invalid step: no action\n")
    assert detect_role(prompt) == "stateact"
    assert detect_role(TextCraft().prompt_template("executor") + "> ") == "executor"
    task = parse_prompt(prompt)
    assert task.role == "stateact" and task.goal is not None and task.goal.item == "beehive"
    assert task.context_inventory == {"honeycomb": 3} and task.commands
    assert [(s.action, s.observation) for s in task.trajectory] == [
        ("get 2 oak logs", "Got 2 oak logs"), ("think: hmm", "OK."),
        ("", "Invalid step: no action")]


# -- writing steps ---------------------------------------------------------------------------
def test_the_simulator_writes_a_full_step_with_its_believed_inventory() -> None:
    env = TextCraft()
    env.reset(goal="craft beehive")
    model = SimTextCraftModel(capability=1)
    goal = "fetch 6 dark oak planks"
    prompt = header(env, goal, "Inventory: [honeycomb] (3) ")
    first = parse_output(ask(model, prompt), FIELDS)
    assert first.goal == goal and first.action is not None and first.thought
    assert first.state == {"current inventory": "[honeycomb] (3)"}
    prompt += (f"goal: {goal}\ncurrent inventory: [honeycomb] (3)\nthought: t\n"
               f"action: {first.action}\nobservation: {env.step(first.action).observation}\n")
    second = parse_output(ask(model, prompt), FIELDS)
    assert first.action == "get 2 dark oak logs" and env_inventory(env) == "[dark oak logs] (2)"
    assert second.state == {"current inventory": "[honeycomb] (3) [dark oak logs] (2)"}
    assert second.action == "craft 4 dark oak planks using 1 dark oak logs"


def test_too_deep_goals_fail_with_a_thought_step() -> None:
    env = TextCraft()
    env.reset(goal="craft beehive")
    out = parse_output(ask(SimTextCraftModel(capability=1), header(env, "craft beehive")),
                       FIELDS)
    assert out.is_thought and out.declaration is False and "too complex" in (out.thought or "")


def test_format_errors_drop_or_double_the_action() -> None:
    env = TextCraft()
    env.reset(goal="craft beehive")
    kinds = set()
    for seed in range(12):
        model = SimTextCraftModel(capability=4, format_error_rate=1.0, seed=seed)
        text, kind = model.respond(header(env, "craft beehive"))
        kinds.add(kind)
        out = parse_output(text, FIELDS)
        if kind == "format:missing_action":
            assert out.action is None and out.error is not None
        else:
            assert kind == "format:two_actions" and out.action is not None
            assert out.action.count("get ") + out.action.count("craft ") == 2
    assert kinds == {"format:missing_action", "format:two_actions"}


# -- end to end ------------------------------------------------------------------------------
class Recording:
    """Wraps the simulator and records the env's true inventory at every executor call."""

    simulated = True

    def __init__(self, env: TextCraft, inner: Any) -> None:
        self.env, self.inner, self.name = env, inner, inner.name
        self.truth: list[str] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if request.stop == [STOP]:
            self.truth.append(env_inventory(self.env))
        response: ChatResponse = await self.inner.complete(request)
        return response


def sample(n: int) -> list[dict[str, Any]]:
    return [t.config for t in tasks("test")[:: max(1, len(tasks("test")) // n)][:n]]


@pytest.mark.parametrize("config", sample(6))
async def test_adapt_with_stateact_and_the_simulator_on_real_textcraft(
    config: dict[str, Any],
) -> None:
    env = TextCraft()
    model = Recording(env, from_spec("sim:textcraft?capability=1&seed=3"))
    sink = MemorySink()
    run_config = RunConfig(d_max=4, executor={"kind": "stateact"})
    result = await run_task(env, config, run_config, model, sink=sink)
    assert result.success and result.reward == 1.0, config
    steps = sorted((s for ss in sink.steps.values() for s in ss), key=lambda s: s.node_id)
    assert steps and all(s.extra is not None and s.error is None for s in steps)
    # the tracked state is the true inventory whenever the simulator makes no mistakes
    calls = [c for c in sink.calls if c.stop == [STOP]]
    assert len(calls) == len(model.truth) == len(steps)
    by_prompt = {c.completion: truth for c, truth in zip(calls, model.truth, strict=True)}
    for s in steps:
        assert s.extra is not None
        assert s.extra["state"]["current inventory"] == by_prompt[s.raw]
