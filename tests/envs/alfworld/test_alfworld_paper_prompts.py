"""The ALFWorld paper prompt set (profile paper): the hybrid executor (the reference's command list
and rules, atomic demonstrations that check their input assumption first, then the heat and
examine trajectories, which end with think: Task completed!) and the planner with its six
demonstrations and the reference's query (the room, then "Goal: <goal>."). Every executor demonstration is produced by our environment: this module
regenerates them and checks that the prompt holds them verbatim."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine.planning.parse import parse_plan
from adapt.envs.alfworld import ALFWorld

PROMPTS = Path(__file__).parents[3] / "adapt/envs/alfworld/prompts/paper"
KITCHEN = {"seed": 1, "task_type": "heat"}
BEDROOM = {"seed": 1, "task_type": "examine"}
CHECK = "think: The assumption holds, so I can go on."

#: (game, setup actions, task, the demonstration's lines: think: ... or actions)
ATOMIC: list[tuple[dict[str, object], list[str], str, list[str]]] = [
    (KITCHEN, ["go to countertop 1", "take apple 2 from countertop 1"],
     "put an apple in/on diningtable 1",
     ["think: My input assumption: I carry an apple. I check this first.", "inventory",
      "examine apple 2", CHECK, "go to diningtable 1", "move apple 2 to diningtable 1",
      "think: The apple 2 is now on the diningtable 1. Task completed!"]),
    (KITCHEN, [], "take an egg from fridge 1",
     ["think: My input assumption: none.", "go to fridge 1", "open fridge 1",
      "take egg 3 from fridge 1", "think: I took the egg 3 from the fridge 1. Task completed!"]),
    (KITCHEN, ["go to countertop 1", "take egg 2 from countertop 1"], "heat an egg",
     ["think: My input assumption: I carry an egg. I check this first.", "inventory",
      "examine egg 2", CHECK, "go to microwave 1", "heat egg 2 with microwave 1",
      "think: I heated the egg 2. Task completed!"]),
    (KITCHEN, ["go to countertop 1", "take bread 1 from countertop 1"], "cool a bread",
     ["think: My input assumption: I carry a bread. I check this first.", "inventory",
      "examine bread 1", CHECK, "go to fridge 1", "cool bread 1 with fridge 1",
      "think: I cooled the bread 1. Task completed!"]),
    (KITCHEN, ["go to countertop 1", "take apple 2 from countertop 1"], "clean an apple",
     ["think: My input assumption: I carry an apple. I check this first.", "inventory",
      "examine apple 2", CHECK, "go to sinkbasin 1", "clean apple 2 with sinkbasin 1",
      "think: I cleaned the apple 2. Task completed!"]),
    (BEDROOM, ["go to dresser 1", "take pen 1 from dresser 1", "go to shelf 2"],
     "use the desklamp to look at the pen 1",
     ["think: My input assumption: I carry the pen 1 and I am where the desklamp is. I check "
      "this first.", "inventory", "examine shelf 2", CHECK, "use desklamp 1",
      "think: I looked at the pen 1 under the desklamp 1. Task completed!"]),
]

#: (game, lines) of the two whole trajectories (the heat and examine tasks)
TRAJECTORIES: list[tuple[dict[str, object], list[str]]] = [
    (KITCHEN, [
        "think: To do the task, I need to find and take an egg, heat it with the microwave, then "
        "put it on the diningtable. An egg is most likely in the fridge, on a countertop or on "
        "the diningtable. I check the fridge 1 first.",
        "go to fridge 1", "open fridge 1", "take egg 3 from fridge 1",
        "think: I carry the egg 3. Next I heat it with the microwave 1.",
        "go to microwave 1", "heat egg 3 with microwave 1",
        "think: The egg 3 is hot. Now I put it on the diningtable 1.",
        "go to diningtable 1", "move egg 3 to diningtable 1", "think: Task completed!"]),
    (BEDROOM, [
        "think: To do the task, I need to find and take a pen, then find a desklamp and use it. "
        "A pen is most likely in a drawer, on the dresser or on a shelf. I check drawer 1 first.",
        "go to drawer 1", "open drawer 1", "go to dresser 1", "take pen 1 from dresser 1",
        "think: I carry the pen 1. Next I look for a desklamp, most likely on a shelf, a desk or "
        "a sidetable.",
        "go to shelf 1", "go to shelf 2", "use desklamp 1", "think: Task completed!"]),
]


def play(env: ALFWorld, lines: list[str]) -> tuple[list[str], bool]:
    out, won = [], False
    for line in lines:
        if line.startswith("think:"):
            out += [f"> {line}", "OK."]
            continue
        result = env.step(line)
        assert result.observation != "Nothing happens.", line
        won = won or result.reward == 1.0
        out += [f"> {line}", result.observation]
    return out, won


def room(game: dict[str, object]) -> str:
    env = ALFWorld()
    try:
        return env.reset(**game).split("\n\nYour task is to:")[0]  # type: ignore[arg-type]
    finally:
        env.close()


def atomic_demo(game: dict[str, object], setup: list[str], task: str, lines: list[str]) -> str:
    env = ALFWorld()
    try:
        env.reset(**game)  # type: ignore[arg-type]
        for action in setup:
            assert env.step(action).observation != "Nothing happens.", action
        played, _ = play(env, lines)
        return "\n".join([f"Your task is to: {task}.", *played]) + "\n"
    finally:
        env.close()


def trajectory(game: dict[str, object], lines: list[str]) -> str:
    env = ALFWorld()
    try:
        observation = env.reset(**game)  # type: ignore[arg-type]
        played, won = play(env, lines)
        assert won, game
        return "\n".join([observation, "", *played]) + "\n"
    finally:
        env.close()


def executor_prompt() -> str:
    return (PROMPTS / "executor.txt").read_text(encoding="utf-8")


def test_the_executor_demonstrations_are_exact_for_our_environment() -> None:
    text = executor_prompt()
    assert room(KITCHEN) + "\n\n" in text and room(BEDROOM) in text
    for game, setup, task, lines in ATOMIC:
        assert atomic_demo(game, setup, task, lines) in text, task
    for game, lines in TRAJECTORIES:
        assert trajectory(game, lines) in text, game
    assert text.endswith("\n$task\n$context\n")
    assert sorted(string.Template(text).get_identifiers()) == ["context", "task"]


def test_the_planner_has_six_demonstrations_that_parse() -> None:
    text = (PROMPTS / "planner.txt").read_text(encoding="utf-8")
    demos = re.findall(r"(Goal: [^\n]+\n(?:[^\n]+\n)+?Execution Order: [^\n]+\n)", text)
    assert len(demos) == 6
    kinds = [d.split("\n")[0] for d in demos]
    assert any("clean" in k for k in kinds) and any("cool" in k for k in kinds)
    for demo in demos:
        plan = parse_plan(demo)
        assert plan.steps and plan.expression is not None, demo
    # the query as the reference's: the room, then "Goal: <goal>."
    assert text.endswith("Here is the goal.\n$room\nGoal: $goal.\n" + text.split(
        "Goal: $goal.\n")[1])
    assert sorted(string.Template(text).get_identifiers()) == ["context", "goal", "room"]


def test_profile_paper_selects_the_paper_prompts() -> None:
    env = ALFWorld()
    try:
        env.reset(**KITCHEN, prompts="paper")  # type: ignore[arg-type]
        assert env.prompt_template("executor") == executor_prompt()
        env.reset(**KITCHEN)  # type: ignore[arg-type]
        assert env.prompt_template("executor") != executor_prompt()
    finally:
        env.close()
    assert ALFWorld.paper_profile["environment_config"]["prompts"] == "paper"


def test_the_executor_states_the_references_commands_and_rules() -> None:
    text = executor_prompt()
    for command in ("go to {recep}", "take {obj} from {recep}", "put {obj} in/on {recep}",
                    "use {lamp}", "heat {obj} with {microwave}", "cool {obj} with {fridge}",
                    "clean {obj} with {sink}", "slice {obj} with {knife}"):
        assert f"- {command}" in text, command
    assert "Heat, cool and clean are shortcuts" in text
    assert "Never take an object to be hot, cool or clean before you have checked it." in text
    whole = text.split("These examples show whole tasks.")[1]
    assert whole.count("> think: Task completed!\nOK.") == 2


async def test_the_paper_planner_asks_goal_x_after_the_room() -> None:
    from adapt.engine import MemorySink, RunConfig, run_task
    from adapt.llm.testing import ScriptedModel

    env = ALFWorld()
    model = ScriptedModel(["think: I cannot. Task failed!", "Step 1: heat egg\n"
                           "Execution Order: (Step 1)", "think: Task failed!"])
    try:
        await run_task(env, KITCHEN, RunConfig(profile="paper", d_max=2), model,
                       sink=MemorySink())
    finally:
        env.close()
    planner = next(r for r in model.requests if r.role == "planner").prompt or ""
    query = planner.split("Here is the goal.\n")[1]
    assert query.startswith(room(KITCHEN) + "\nGoal: heat some egg and put it in diningtable.\n")
    assert "Your task is to:" not in query
