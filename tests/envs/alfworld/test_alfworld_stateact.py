"""The ALFWorld StateAct prompt (goal, current location, current inventory, thought, action):
its demonstrations are produced by our environment (this module regenerates them and compares),
and StateAct runs on ALFWorld with the StateAct paper's step budget under profile paper."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.resolve import resolve_config
from adapt.envs.alfworld import ALFWorld
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

#: (seed, task type, [(thought, action)]): the heat and examine tasks of the papers' examples
DEMOS: list[tuple[int, str, list[tuple[str, str]]]] = [
    (1, "heat", [
        ("I need an egg, then the microwave to heat it, then the diningtable. An egg is most "
         "likely in the fridge, on a countertop or on the diningtable; I try the fridge 1 first.",
         "go to fridge 1"),
        ("The fridge 1 is closed, so I open it to see what is inside.", "open fridge 1"),
        ("There is an egg 3 in the fridge 1. I take it.", "take egg 3 from fridge 1"),
        ("I hold the egg 3. Now I go to the microwave 1 to heat it.", "go to microwave 1"),
        ("I am at the microwave 1, so I heat the egg 3 with it.",
         "heat egg 3 with microwave 1"),
        ("The egg 3 is hot. Next I take it to the diningtable 1.", "go to diningtable 1"),
        ("I am at the diningtable 1, so I put the egg 3 here.", "move egg 3 to diningtable 1"),
        ("The hot egg is on the diningtable. Task completed!", "think"),
    ]),
    (1, "examine", [
        ("I need a pen, then a desklamp to look at it under. A pen is most likely in a drawer, "
         "on the dresser or on a shelf; I try drawer 1 first.", "go to drawer 1"),
        ("The drawer 1 is closed, so I open it.", "open drawer 1"),
        ("The drawer 1 is empty. I try the dresser 1 next.", "go to dresser 1"),
        ("There is a pen 1 on the dresser 1. I take it.", "take pen 1 from dresser 1"),
        ("I hold the pen 1. Now I need a desklamp; lamps usually stand on a shelf, a desk or a "
         "sidetable. I try shelf 1.", "go to shelf 1"),
        ("No desklamp on the shelf 1. I try shelf 2.", "go to shelf 2"),
        ("There is a desklamp 1 on the shelf 2, so I turn it on to look at the pen 1.",
         "use desklamp 1"),
        ("I looked at the pen under the desklamp. Task completed!", "think"),
    ]),
]


def demo(seed: int, task_type: str, steps: list[tuple[str, str]]) -> str:
    """A demonstration: the reset observation, then every step with the state as our
    environment has it before the step, and the observation it gives."""
    env = ALFWorld()
    try:
        observation = env.reset(seed=seed, task_type=task_type)
        lines = [observation, ""]
        won = False
        for thought, action in steps:
            location = env._engine.location() or "the middle of the room"
            held = ", ".join(env._engine.inventory()) or "nothing"
            result = env.step(action) if action != "think" else None
            seen = "OK." if result is None else result.observation
            won = won or bool(result and result.reward == 1.0)
            lines += [f"goal: {env.goal}", f"current location: {location}",
                      f"current inventory: {held}", f"thought: {thought}", f"action: {action}",
                      f"observation: {seen}"]
        assert won, f"the demonstration does not win game {seed} ({task_type})"
        return "\n".join(lines) + "\n"
    finally:
        env.close()


def prompt() -> str:
    return (Path(__file__).parents[3] / "adapt/envs/alfworld/prompts/stateact.txt").read_text()


def test_the_demonstrations_are_exact_for_our_environment() -> None:
    text = prompt()
    for seed, task_type, steps in DEMOS:
        assert demo(seed, task_type, steps) in text, (seed, task_type)
    assert text.endswith("\n$task\n$context\n")
    assert sorted(string.Template(text).get_identifiers()) == ["context", "task"]


def test_paper_profile_gives_stateact_its_step_budget() -> None:
    config = RunConfig.model_validate({"profile": "paper", "executor": {"kind": "stateact"}})
    out, env_config = resolve_config(config, ALFWorld)
    assert out.executor.max_steps == 100  # the StateAct code's 100 model calls
    assert out.react_steps == 100  # alone on the task (strategy react), whatever d_max
    assert env_config == {"rollback": True, "prompts": "paper"}
    react, _ = resolve_config(RunConfig(profile="paper"), ALFWorld)
    assert react.executor.max_steps == 20


async def test_stateact_plays_an_alfworld_game() -> None:
    env = ALFWorld()
    env.reset(seed=1, task_type="examine")
    walk = env.walkthrough()
    in_demos = prompt().count("\nobservation: ")

    def reply(request: ChatRequest) -> str:
        step = (request.prompt or "").count("\nobservation: ") - in_demos
        action = walk[step] if step < len(walk) else "think"
        return (f"goal: {env.goal}\ncurrent location: somewhere\ncurrent inventory: nothing\n"
                f"thought: next\naction: {action}")

    sink = MemorySink()
    try:
        result = await run_task(env, {"seed": 1, "task_type": "examine"},
                                RunConfig(strategy="react", d_max=1,
                                          executor={"kind": "stateact"}),
                                FunctionModel(reply), sink=sink)
    finally:
        env.close()
    assert result.reward == 1.0
    assert [s.text for s in sink.steps[1]] == walk
