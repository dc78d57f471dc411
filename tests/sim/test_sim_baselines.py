"""The simulator answers the baselines' prompts (plan_and_execute, reflection) on real TextCraft."""

from __future__ import annotations

import asyncio
import re
from string import Template
from typing import Any

import pytest

pytest.importorskip("adapt.envs.textcraft.solver")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft, tasks
from adapt.llm.base import ChatRequest
from adapt.sim import SimTextCraftModel, from_spec
from adapt.sim.prompt_parse import detect_role, parse_prompt


def sample(depth: int, n: int) -> list[dict[str, Any]]:
    chosen = [t for t in tasks("all") if t.depth == depth]
    step = max(1, len(chosen) // n)
    return [t.config for t in chosen[::step][:n]]


def render(env: TextCraft, kind: str, **extra: str) -> str:
    return Template(env.prompt_template(kind)).safe_substitute(
        task=env.task_observation(env.goal), context="", **extra
    )


def ask(model: SimTextCraftModel, prompt: str) -> str:
    return asyncio.run(model.complete(ChatRequest(prompt=prompt))).text


async def rate(strategy: str, spec: str, games: list[dict[str, Any]], d_max: int = 4) -> float:
    model = from_spec(spec)
    wins = 0
    for cfg in games:
        result = await run_task(TextCraft(), cfg, RunConfig(strategy=strategy, d_max=d_max), model)
        wins += result.reward > 0
    return wins / len(games)


def test_roles_of_the_real_templates() -> None:
    env = TextCraft()
    env.reset(seed=3)
    assert detect_role(render(env, "plan_and_execute")) == "plan_and_execute"
    assert (
        detect_role(render(env, "reflection", trajectory="> get 1 oak logs\nGot 1 oak logs\n"))
        == "reflection"
    )
    assert detect_role(render(env, "planner")) == "planner"
    assert detect_role(render(env, "executor") + "> ") == "executor"


def test_detailed_plan_covers_every_level_in_dependency_order() -> None:
    env = TextCraft()
    env.reset(**sample(3, 1)[0])
    text = ask(SimTextCraftModel(), render(env, "plan_and_execute"))
    steps = re.findall(r"^Step \d+: (.+)$", text, re.MULTILINE)
    assert text.splitlines()[-1].startswith("Execution Order: (Step 1 AND")
    kinds = [s.split()[0] for s in steps]
    assert kinds == sorted(kinds, key=lambda k: k != "fetch")  # all fetches first
    crafted = {
        re.sub(r"^craft \d+ (.+?) using .*$", r"\1", s) for s in steps if s.startswith("craft")
    }
    assert len(crafted) >= 2  # intermediate items are planned too (depth-3 goal)
    assert steps[-1].startswith("craft") and env.goal.removeprefix("craft ") in steps[-1]
    # executing the steps as actions crafts the goal
    reward = 0.0
    for step in steps:
        result = env.step("get " + step[len("fetch ") :] if step.startswith("fetch ") else step)
        assert not result.observation.startswith(("Could", "Wrong")), (step, result.observation)
        reward = max(reward, result.reward)
    assert reward == 1.0


def test_detailed_plan_knobs() -> None:
    env = TextCraft()
    env.reset(**sample(3, 1)[0])
    prompt = render(env, "plan_and_execute")
    clean = SimTextCraftModel().respond(prompt)
    assert clean[1] == "plan"
    assert SimTextCraftModel(error_rate=1.0).respond(prompt)[1].startswith("mistake:")
    assert SimTextCraftModel(format_error_rate=1.0).respond(prompt)[1].startswith("format:")


async def test_plan_and_execute_with_a_capable_executor_solves_real_games() -> None:
    for cfg in sample(2, 3) + sample(3, 3):
        sink = MemorySink()
        result = await run_task(
            TextCraft(),
            cfg,
            RunConfig(strategy="plan_and_execute", d_max=4),
            from_spec("sim:textcraft?capability=2"),
            sink=sink,
        )
        assert result.success and result.reward == 1.0, cfg
        assert result.usage_by_role["planner"].llm_calls == 1
        assert result.max_depth == 2 and sink.nodes[1].termination == "planned"
        assert all(n.plan is None for n in sink.nodes.values() if n.id != 1)


async def test_plan_slips_hurt_a_weak_executor() -> None:
    games = sample(2, 10) + sample(3, 10)
    weak = await rate("plan_and_execute", "sim:textcraft?capability=1&error_rate=0.2", games)
    strong = await rate("plan_and_execute", "sim:textcraft?capability=2&error_rate=0.2", games)
    adaptive = await rate("adapt", "sim:textcraft?capability=1&error_rate=0.2", games)
    assert weak < strong and weak < adaptive


def test_reflection_is_one_paragraph_about_the_failed_action() -> None:
    env = TextCraft()
    env.reset(seed=3)
    trajectory = (
        "> get 2 oak planks\nCould not find oak planks\n> think: stuck. Task failed!\nOK.\n"
    )
    prompt = render(env, "reflection", trajectory=trajectory)
    task = parse_prompt(prompt)
    assert [s.action for s in task.trajectory] == ["get 2 oak planks", "think: stuck. Task failed!"]
    text = ask(SimTextCraftModel(), prompt)
    assert text and "\n" not in text and "get 2 oak planks" in text
    gave_up = ask(
        SimTextCraftModel(),
        render(env, "reflection", trajectory=("> think: too deep. Task failed!\nOK.\n")),
    )
    assert gave_up and "\n" not in gave_up and "bottom-up" in gave_up


async def test_reflexion_and_try_again_on_real_textcraft() -> None:
    model = from_spec("sim:textcraft?capability=2&error_rate=0.5")
    games = sample(2, 20)
    for strategy in ("try_again", "reflexion"):
        retried_wins = 0
        for cfg in games:
            sink = MemorySink()
            result = await run_task(
                TextCraft(), cfg, RunConfig(strategy=strategy, d_max=3), model, sink=sink
            )
            trials = sink.children(1)
            assert result.max_depth == 1 and 1 <= len(trials) <= 3
            retried_wins += result.success and len(trials) > 1
            reflections = [c.completion for c in sink.calls if c.role == "reflection"]
            assert all(r.strip() and "\n" not in r for r in reflections)
            if strategy == "reflexion" and len(trials) > 1:
                assert trials[0].context_out == reflections[0]
        # a later trial can succeed where the first failed
        assert retried_wins > 0, strategy


def test_the_plan_and_execute_template_examples_work_in_the_real_env() -> None:
    env = TextCraft()
    template = env.prompt_template("plan_and_execute")
    assert template.endswith("\n\n$task\n$context\n")
    examples = template.split("Crafting commands:\n")[1:]
    assert len(examples) == 2
    for example in examples:
        commands, _, rest = example.partition("\n\nGoal: ")
        goal = rest.split(".\n", 1)[0]
        env.reset(goal=goal, commands=commands.splitlines())
        steps = re.findall(r"^Step \d+: (.+)$", rest, re.MULTILINE)
        assert re.search(r"^Execution Order: \(Step 1 AND", rest, re.MULTILINE)
        reward = 0.0
        for step in steps:
            action = "get " + step[len("fetch ") :] if step.startswith("fetch ") else step
            result = env.step(action)
            assert not result.observation.startswith(("Could", "Wrong")), (step, result)
            reward = max(reward, result.reward)
        assert reward == 1.0, goal
