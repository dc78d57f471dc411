"""Tests of the example plug-in; run them after ``pip install -e .`` (see the README)."""

from __future__ import annotations

import re
from collections import deque
from importlib import metadata, resources
from typing import Any

import pytest
from adapt.envs import StepResult
from adapt.envs.testing import check_environment
from pydantic import ValidationError

from adapt_env_keys import ACTION_GRAMMAR, KeysConfig, KeysEnv, build_house

VALID_ACTIONS = ["look", "inventory", "take brass key", "go to kitchen", "open chest"]

# The houses the prompt examples are played in: (config, actions done before the example).
SMALL = {"seed": 4, "rooms": 3, "locked_doors": 1, "distractors": 1}
FOUR = {"seed": 17, "rooms": 4, "locked_doors": 2, "distractors": 1}
EXECUTOR_EXAMPLES: list[tuple[dict[str, int], list[str]]] = [
    (SMALL, []),
    (FOUR, ["take red key"]),
    (FOUR, []),
]
PLANNER_EXAMPLES: list[tuple[dict[str, int], str, list[str]]] = [
    (FOUR, "open the chest in the library", []),
    (
        FOUR,
        "take the brass key",
        [
            "take red key",
            "unlock door to cellar with red key",
            "go to pantry",
            "take purple key",
            "go to bedroom",
            "go to cellar",
        ],
    ),
]


def prompt(kind: str) -> str:
    return resources.files("adapt_env_keys").joinpath("prompts", f"{kind}.txt").read_text("utf-8")


def started(config: dict[str, Any], setup: list[str]) -> KeysEnv:
    env = KeysEnv()
    env.reset(**config)
    for action in setup:
        assert not env.is_failure(env.step(action).observation), action
    return env


def test_conformance_kit_passes() -> None:
    report = check_environment(KeysEnv, actions=VALID_ACTIONS)
    assert "deterministic_steps" in report.passed
    assert len(report.configs) == 2  # the config model's JSON-schema examples


def test_conformance_kit_passes_for_more_seeds() -> None:
    configs = [{"seed": seed, "rooms": 10, "locked_doors": 7} for seed in (1, 2)]
    check_environment(KeysEnv, configs=configs)


def test_registered_through_the_entry_point() -> None:
    try:
        metadata.distribution("adapt-env-keys")
    except metadata.PackageNotFoundError:
        pytest.skip("adapt-env-keys is not installed (pip install -e .)")
    from adapt.envs import create, get_environment, refresh

    refresh()
    assert get_environment("keys") is KeysEnv
    assert isinstance(create("keys"), KeysEnv)


def test_same_seed_same_house_other_seed_other_house() -> None:
    houses = {repr(build_house(seed, 6, 3, 2)) for seed in range(20)}
    assert build_house(3, 6, 3, 2) == build_house(3, 6, 3, 2)
    assert len(houses) > 15


def _items(observation: str) -> list[str]:
    found = re.search(r"You see: (.*?)\.(?: |$)", observation)
    if found is None:
        return []
    return [re.sub(r"^an? ", "", item) for item in found.group(1).split(", ")]


def solve(config: dict[str, Any]) -> StepResult:
    """Play greedily with what the task observation and ``look`` tell: take everything, unlock
    what the keys open, visit the nearest unvisited room; open the chest when possible."""
    settings = KeysConfig.model_validate(config)
    house = build_house(settings.seed, settings.rooms, settings.locked_doors, settings.distractors)
    env = KeysEnv()
    env.reset(**config)

    def act(action: str) -> StepResult:
        result = env.step(action)
        assert not env.is_failure(result.observation), (action, result.observation)
        return result

    room, carrying, unlocked, visited = house.start, set(), set(), set()
    for _ in range(4 * len(house.rooms)):
        visited.add(room)
        for item in _items(act("look").observation):
            act(f"take {item}")
            carrying.add(item)
        for door in house.neighbours(room):
            key = f"{door.colour} key"
            if door.colour and door.inner not in unlocked and key in carrying:
                act(f"unlock door to {door.other(room)} with {key}")
                unlocked.add(door.inner)
        if room == house.chest_room and "brass key" in carrying:
            return act("open chest")
        # breadth-first search for the nearest room worth going to
        want = set(house.rooms) - visited
        if "brass key" in carrying:
            want.add(house.chest_room)
        for door in house.doors:  # go back to a door that a key found since then opens
            if door.colour and door.inner not in unlocked and f"{door.colour} key" in carrying:
                want.add(door.outer)
        paths: dict[str, list[str]] = {room: []}
        queue = deque([room])
        target = None
        while queue and target is None:
            here = queue.popleft()
            for door in house.neighbours(here):
                there = door.other(here)
                if there in paths or (door.colour and door.inner not in unlocked):
                    continue
                paths[there] = [*paths[here], there]
                if there in want:
                    target = there
                    break
                queue.append(there)
        assert target is not None, f"stuck in {room} carrying {carrying}"
        for step in paths[target]:
            act(f"go to {step}")
        room = target
    raise AssertionError("no solution found")


@pytest.mark.parametrize("rooms", [2, 3, 5, 10])
def test_every_house_can_be_solved(rooms: int) -> None:
    for seed in range(25):
        for locked in sorted({0, 1, rooms - 1}):
            config = {"seed": seed, "rooms": rooms, "locked_doors": min(locked, 7)}
            result = solve(config)
            assert result.done and result.reward == 1.0 and result.info == {"success": True}


def test_failures_and_thoughts() -> None:
    env = started(FOUR, [])
    assert env.is_failure(env.step("go to cellar").observation)  # locked
    assert env.is_failure(env.step("go to library").observation)  # no door from here
    assert env.is_failure(env.step("take brass key").observation)  # not here
    assert env.is_failure(env.step("unlock door to cellar with red key").observation)
    assert env.is_failure(env.step("dance").observation)
    assert env.step("think: hmm").observation == "OK."
    assert not env.is_failure(env.step("Take the Red Key.").observation)
    assert env.step("unlock the door to the cellar with the red key").observation.startswith("You")
    assert env.salient_state() == (
        "You are in the bedroom. You are carrying: red key. Unlocked doors: to cellar."
    )


def test_config_model() -> None:
    assert KeysConfig().model_dump() == {"seed": 0, "rooms": 5, "locked_doors": 2, "distractors": 2}
    with pytest.raises(ValidationError, match="locked_doors"):
        KeysConfig(rooms=2, locked_doors=2)
    with pytest.raises(ValidationError):
        KeysConfig.model_validate({"colour": "red"})
    assert KeysConfig.model_json_schema()["examples"][0] == {"seed": 0}


@pytest.mark.parametrize("kind", ["executor", "planner"])
def test_prompt_templates_end_with_task_and_context(kind: str) -> None:
    text = KeysEnv().prompt_template(kind)
    assert text == prompt(kind)
    assert text.endswith("\n\n$task\n$context\n")


def test_executor_examples_are_real_trajectories() -> None:
    text = prompt("executor")
    parts = text.split("\n\nHere is ")[1:-1]
    assert len(parts) == len(EXECUTOR_EXAMPLES)
    for part, (config, setup) in zip(parts, EXECUTOR_EXAMPLES, strict=True):
        actions = [line[2:] for line in part.splitlines() if line.startswith("> ")]
        goal = re.findall(r"^Goal: (.*)\.$", part, re.MULTILINE)[0]
        env = started(config, setup)
        context = (env.salient_state() or "") if setup else ""
        lines = [env.task_observation(goal), context]
        for action in actions:
            lines.append(f"> {action}\n{env.step(action).observation}")
        assert "\n".join(lines) in part
        assert actions[-1].startswith("think:")
        assert "Task completed!" in actions[-1] or "Task failed!" in actions[-1]


def test_planner_examples_match_the_environment() -> None:
    text = prompt("planner")
    for config, goal, setup in PLANNER_EXAMPLES:
        env = started(config, setup)
        head = f"{env.task_observation(goal)}\n{env.salient_state() if setup else ''}\nStep 1: "
        assert head in text
    orders = re.findall(r"^Execution Order: \((.*)\)$", text, re.MULTILINE)
    assert orders == ["Step 1 AND Step 2 AND Step 3 AND Step 4 AND Step 5 AND Step 6",
                      "Step 1 OR Step 2"]  # fmt: skip


def test_the_action_grammar_lists_every_action_of_the_prompt() -> None:
    forms = [line.split("  (")[0] for line in ACTION_GRAMMAR.splitlines()]
    patterns = [re.compile(re.sub(r"<[a-z]+>", ".+", form)) for form in forms]
    actions = [line[2:] for line in prompt("executor").splitlines() if line.startswith("> ")]
    for action in [*actions, *VALID_ACTIONS]:
        assert any(p.fullmatch(action) for p in patterns), action
    assert ACTION_GRAMMAR in KeysEnv().prompt_template("executor")
