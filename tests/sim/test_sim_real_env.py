"""The simulated agent playing the real TextCraft environment, with the env's own prompts."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass
from string import Template

import pytest

pytest.importorskip("adapt.envs.textcraft.solver")

from adapt.envs.textcraft import TextCraft, tasks
from adapt.envs.textcraft.solver import solve
from adapt.llm.base import ChatRequest
from adapt.sim import SimTextCraftModel

MAX_STEPS = 20
#: every 5th task of the whole set (depths 2, 3 and 4)
SAMPLE = tasks("all")[::5]


@pytest.fixture(scope="module")
def env() -> TextCraft:
    return TextCraft()


def ask(model: SimTextCraftModel, prompt: str, stop: list[str] | None = None) -> str:
    return asyncio.run(model.complete(ChatRequest(prompt=prompt, stop=stop or []))).text


@dataclass
class Run:
    lines: list[str]
    observations: list[str]
    reward: float

    @property
    def said(self) -> str:
        return self.lines[-1] if self.lines else ""


def execute(env: TextCraft, model: SimTextCraftModel, goal: str, context: str = "") -> Run:
    """The engine's executor loop in miniature: template header + trajectory + '> '."""
    header = Template(env.prompt_template("executor")).safe_substitute(
        task=env.task_observation(goal), context=context
    )
    trajectory, lines, observations, reward = "", [], [], 0.0
    for _ in range(MAX_STEPS):
        line = ask(model, header + trajectory + "> ", ["\n"]).strip().lstrip(">").strip()
        if line.lower().startswith("think:"):
            observation = "OK."
        else:
            result = env.step(line)
            observation, reward = result.observation, max(reward, result.reward)
        lines.append(line)
        observations.append(observation)
        trajectory += f"> {line}\n{observation}\n"
        if reward > 0 or "Task completed!" in line or "Task failed!" in line:
            break
    return Run(lines, observations, reward)


def plan(env: TextCraft, model: SimTextCraftModel, goal: str, context: str) -> list[str]:
    prompt = Template(env.prompt_template("planner")).safe_substitute(
        task=env.task_observation(goal), context=context
    )
    text = ask(model, prompt)
    return [m.group(1).strip() for m in re.finditer(r"^Step \d+: (.+)$", text, re.MULTILINE)]


def adapt(env: TextCraft, model: SimTextCraftModel, goal: str, depth: int = 1) -> bool:
    """ADaPT (Algorithm 1) with AND plans and inventory propagation, d_max = 4."""
    context = (env.salient_state() or "") if depth > 1 else ""
    run = execute(env, model, goal, context)
    if run.reward > 0 or "Task completed!" in run.said:
        return True
    if depth >= 4:
        return False
    steps = plan(env, model, goal, context)
    return bool(steps) and all(adapt(env, model, step, depth + 1) for step in steps)


@pytest.mark.parametrize("capability", [1, 2, 3, 4])
def test_executor_alone_matches_its_capability(env: TextCraft, capability: int) -> None:
    model = SimTextCraftModel(capability=capability)
    outcomes: Counter[str] = Counter()
    for task in SAMPLE:
        env.reset(**task.config)
        feasible = len(solve(env)) < MAX_STEPS - 1
        run = execute(env, model, task.goal)
        if task.depth <= capability and feasible:
            assert run.reward == 1.0, (task.goal, run.lines)
            assert not any(o.startswith("Could not") for o in run.observations)
            outcomes["solved"] += 1
        elif task.depth > capability:
            assert run.lines == [run.said] and "Task failed!" in run.said, (task.goal, run.lines)
            assert run.reward == 0.0
            outcomes["gave_up"] += 1
    if capability == 1:
        assert outcomes == {"gave_up": len(SAMPLE)}  # every TextCraft goal has depth >= 2
    else:
        assert outcomes["solved"] >= 10


def test_depth_one_sub_tasks_at_capability_1(env: TextCraft) -> None:
    model = SimTextCraftModel(capability=1)
    env.reset(goal="craft beehive")
    run = execute(env, model, "fetch 6 oak planks")
    assert run.lines[:3] == [
        "get 2 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 oak planks using 1 oak logs",
    ]
    assert "Task completed!" in run.said and env.inventory["oak_planks"] == 8


def test_context_propagation_decides_success(env: TextCraft) -> None:
    model = SimTextCraftModel(capability=1)
    env.reset(goal="craft beehive")
    for action in (
        "get 2 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "get 3 honeycomb",
    ):
        env.step(action)
    sub_task = "craft 1 beehive using 6 oak planks, 3 honeycomb"
    blind = execute(env, model, sub_task)  # no context: it thinks it must make the planks
    assert blind.lines == [blind.said] and "Task failed!" in blind.said
    informed = execute(env, model, sub_task, env.salient_state() or "")
    assert informed.lines[0] == sub_task and informed.reward == 1.0


def test_planner_on_a_real_game(env: TextCraft) -> None:
    model = SimTextCraftModel(capability=1)
    env.reset(goal="craft beehive")
    steps = plan(env, model, "craft beehive", "")
    kind = steps[0].removeprefix("fetch 6 ")
    assert kind.endswith(" planks") and kind in env.task_observation("x")  # a concrete kind
    assert steps == [
        f"fetch 6 {kind}",
        "fetch 3 honeycomb",
        f"craft 1 beehive using 6 {kind}, 3 honeycomb",
    ]
    # with planks of some kind held, the planner uses them and fetches only what is missing
    env.step("get 1 birch logs")
    env.step("craft 4 birch planks using 1 birch logs")
    assert plan(env, model, "craft beehive", env.salient_state() or "") == [
        "fetch 6 birch planks",
        "fetch 3 honeycomb",
        "craft 1 beehive using 6 birch planks, 3 honeycomb",
    ]


@pytest.mark.parametrize(("capability", "error_rate", "minimum"), [(1, 0.0, 0.95), (1, 0.1, 0.8)])
def test_adapt_decomposition_solves_most_games(
    env: TextCraft, capability: int, error_rate: float, minimum: float
) -> None:
    solved = 0
    for index, task in enumerate(SAMPLE):
        env.reset(**task.config)
        model = SimTextCraftModel(capability=capability, error_rate=error_rate, seed=index)
        adapt(env, model, task.goal)
        solved += env.inventory.get(task.item, 0) > 0
    assert solved >= minimum * len(SAMPLE)
