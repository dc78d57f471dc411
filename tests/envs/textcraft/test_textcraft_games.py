"""Game generation, explicit games, determinism across processes, leakage, config errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from adapt.envs.textcraft import TextCraft, TextCraftConfig
from adapt.envs.textcraft.book import load_book
from adapt.envs.textcraft.game import MAX_DISTRACTORS, RETIRED_GOALS, game_for_seed
from adapt.errors import InvalidConfig

BOOK = load_book()
SEEDS = [0, 1, 2, 3, 17, 123, 99999, -5]

GRANITE_COMMANDS = [
    "craft 4 polished granite stairs using 6 polished granite",
    "craft 4 polished granite using 4 granite",
    "craft 1 granite using 1 diorite, 1 quartz",
    "craft 2 diorite using 2 quartz, 2 cobblestone",
    "craft 6 polished granite slab using 3 polished granite",
    "craft 1 stick using 1 planks",
]


def split_observation(observation: str) -> tuple[list[str], str]:
    head, goal = observation.split("\n\nGoal: ")
    assert head.startswith("Crafting commands:\n")
    assert goal.endswith(".")
    return head.removeprefix("Crafting commands:\n").split("\n"), goal[:-1]


# -- generated games -----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_seeded_game_layout(seed: int) -> None:
    env = TextCraft()
    observation = env.reset(seed=seed)
    lines, goal = split_observation(observation)
    assert goal == env.goal and goal.startswith("craft ")
    item = env.game.goal
    assert BOOK.depth(item) >= 2
    gold = {r.line for r in BOOK.recipe_tree(item)}
    assert gold <= set(lines)
    assert len(lines) == len(set(lines))
    distractors = set(lines) - gold
    assert len(distractors) <= MAX_DISTRACTORS
    # distractors use an ingredient of the recipe tree
    ingredients = {i for r in BOOK.recipe_tree(item) for i, _ in r.inputs}
    for line in distractors:
        recipe = next(r for r in BOOK.recipes if r.line == line)
        assert ingredients & set(recipe.needs), line
    assert env.task_observation(goal) == observation


def test_recipe_tree_is_complete() -> None:
    tree = {r.line for r in BOOK.recipe_tree("beehive")}
    assert "craft 1 beehive using 6 planks, 3 honeycomb" in tree
    for wood in ("oak", "birch", "spruce", "jungle", "acacia", "dark_oak"):
        assert (
            f"craft 4 {wood.replace('_', ' ')} planks using 1 {wood.replace('_', ' ')} logs" in tree
        )
    assert "craft 4 crimson planks using 1 crimson stems" in tree
    assert len(tree) == 9


def test_seeds_give_varied_goals() -> None:
    env = TextCraft()
    goals = set()
    for seed in range(50):
        env.reset(seed=seed)
        goals.add(env.goal)
    assert len(goals) > 30


def test_seeds_keep_their_goals_when_the_recipe_data_changes() -> None:
    """Goals drawn before the recipe table (the minecraft-data book) are drawn still."""
    before = {0: "golden_pickaxe", 1: "granite_stairs", 2: "shield", 3: "acacia_trapdoor",
              6: "polished_granite_slab", 11: "comparator", 17: "red_sandstone_wall", 29: "loom"}
    assert {seed: game_for_seed(BOOK, seed).goal for seed in before} == before
    # seed 5 drew chiseled quartz block, a goal no more (depth 1): it draws again
    assert "chiseled_quartz_block" in RETIRED_GOALS
    assert "chiseled_quartz_block" not in BOOK.goals
    assert game_for_seed(BOOK, 5).goal == "crimson_trapdoor"


def test_goal_only_game_is_deterministic_and_complete() -> None:
    a, b = TextCraft(), TextCraft()
    first = a.reset(goal="craft polished granite stairs")
    assert b.reset(goal="Craft Polished Granite Stairs.") == first
    assert a.goal == "craft polished granite stairs"
    lines, _ = split_observation(first)
    assert {r.line for r in BOOK.recipe_tree("polished_granite_stairs")} <= set(lines)


# -- determinism across processes ----------------------------------------------------------------
_SCRIPT = """
import json, sys
from adapt.envs.textcraft import TextCraft, tasks
env = TextCraft()
seeds = json.loads(sys.argv[1])
out = {"seeds": [env.reset(seed=s) for s in seeds],
       "goal": env.reset(goal="craft lantern"),
       "tasks": [(t.id, t.split, t.depth) for t in tasks("all")]}
print(json.dumps(out))
"""


def _in_subprocess(hash_seed: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(SEEDS)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_generation_is_identical_across_processes_and_hash_seeds() -> None:
    from adapt.envs.textcraft import tasks

    env = TextCraft()
    here = {
        "seeds": [env.reset(seed=s) for s in SEEDS],
        "goal": env.reset(goal="craft lantern"),
        "tasks": [[t.id, t.split, t.depth] for t in tasks("all")],
    }
    for hash_seed in ("0", "4242"):
        assert _in_subprocess(hash_seed) == here, hash_seed


# -- explicit games ------------------------------------------------------------------------------
def test_explicit_game_is_replayed_verbatim() -> None:
    env = TextCraft()
    observation = env.reset(goal="craft polished granite stairs", commands=GRANITE_COMMANDS)
    commands = "\n".join(GRANITE_COMMANDS)
    assert observation == f"Crafting commands:\n{commands}\n\nGoal: craft polished granite stairs."
    assert env.game.commands == tuple(GRANITE_COMMANDS)


def test_explicit_game_extra_commands_are_craftable() -> None:
    env = TextCraft()
    env.reset(goal="craft polished granite stairs", commands=GRANITE_COMMANDS)
    env.step("get 1 oak logs")
    env.step("craft 4 oak planks using 1 oak logs")
    # 'craft 1 stick using 1 planks' is not a Minecraft recipe, but this game lists it
    assert env.step("craft 1 stick using 1 oak planks").observation == "Crafted 1 minecraft:stick"
    env.reset(seed=1)
    env.step("get 1 oak logs")
    env.step("craft 4 oak planks using 1 oak logs")
    assert (
        env.step("craft 1 stick using 1 oak planks").observation
        == "Could not find a valid recipe for stick"
    )


def test_explicit_game_accepts_spacing_and_case_in_lines() -> None:
    env = TextCraft()
    env.reset(goal="craft granite", commands=["Craft 1  Granite using 1 diorite,  1 QUARTZ"])
    assert env.game.recipes[0].line == "craft 1 granite using 1 diorite, 1 quartz"


# -- no leakage between resets -------------------------------------------------------------------
def test_nothing_leaks_between_resets() -> None:
    commands_before = BOOK.commands()
    by_output_before = {k: list(v) for k, v in BOOK.by_output.items()}
    env = TextCraft()
    first = env.reset(seed=5)
    env.step("get 3 oak logs")
    env.step("get 1 honeycomb")
    env.reset(goal="craft polished granite stairs", commands=GRANITE_COMMANDS)
    env.step("get 1 oak logs")
    for seed in range(100):
        env.reset(seed=seed)
    assert env.reset(seed=5) == first
    assert env.step("inventory").observation == "Inventory: You are not carrying anything."
    # the explicit game's extra recipe is gone
    env.step("get 1 oak logs")
    env.step("craft 4 oak planks using 1 oak logs")
    assert env.step("craft 1 stick using 1 oak planks").observation.startswith("Could not")
    assert BOOK.commands() == commands_before
    assert {k: list(v) for k, v in BOOK.by_output.items()} == by_output_before


def test_instances_are_independent() -> None:
    a, b = TextCraft(), TextCraft()
    a.reset(seed=1)
    b.reset(seed=1)
    a.step("get 2 oak logs")
    assert b.step("inventory").observation == "Inventory: You are not carrying anything."
    assert a.book is b.book


# -- config --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "exactly one of seed"),
        ({"seed": 1, "goal": "craft beehive"}, "exactly one of seed"),
        ({"seed": 1, "commands": ["craft 4 stick using 2 planks"]}, "commands need a goal"),
        ({"seed": "three"}, "seed"),
        ({"goal": "craft beehive", "colour": "red"}, "colour"),
        ({"goal": "craft unobtainium"}, "unknown goal item 'unobtainium'"),
        ({"goal": "craft diamond"}, "has no crafting recipe"),
        ({"goal": "craft planks"}, "names the tag 'planks', not an item"),
        ({"goal": "craft beehive", "commands": []}, "commands is empty"),
        ({"goal": "craft beehive", "commands": ["make a beehive"]}, "malformed crafting command"),
        ({"goal": "craft beehive", "commands": [""]}, "malformed crafting command"),
        (
            {"goal": "craft beehive", "commands": ["craft 1 beehive using six planks"]},
            "malformed ingredient 'six planks'",
        ),
        (
            {"goal": "craft beehive", "commands": ["craft 1 beehive using 6 plonks"]},
            "unknown item 'plonks'",
        ),
        (
            {"goal": "craft beehive", "commands": ["craft 1 beehyve using 6 planks"]},
            "unknown item 'beehyve'",
        ),
        (
            {"goal": "craft beehive", "commands": ["craft 4 planks using 1 oak logs"]},
            "'planks' in command .* is a tag, not an item",
        ),
        (
            {"goal": "craft beehive", "commands": ["craft 0 beehive using 6 planks"]},
            "counts must be positive",
        ),
        (
            {"goal": "craft beehive", "commands": ["craft 1 beehive using 3 planks, 3 planks"]},
            "repeated",
        ),
    ],
)
def test_invalid_config_raises(config: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfig, match=message):
        TextCraft().reset(**config)


def test_explicit_goal_may_be_crafted_only_by_the_listed_commands() -> None:
    env = TextCraft()
    env.reset(goal="craft diamond", commands=["craft 1 diamond using 9 coal"])
    env.step("get 9 coal")
    result = env.step("craft 1 diamond using 9 coal")
    assert (result.observation, result.reward, result.done) == (
        "Crafted 1 minecraft:diamond",
        1,
        True,
    )
    # the goal entering the inventory is what counts, also through get
    env.reset(goal="craft diamond", commands=["craft 1 diamond using 9 coal"])
    result = env.step("get 1 diamond")
    assert (result.observation, result.reward, result.done) == ("Got 1 diamond", 1, True)


def test_config_model_and_schema() -> None:
    assert TextCraft.config_model is TextCraftConfig
    assert TextCraftConfig.__doc__
    schema = TextCraftConfig.model_json_schema()
    assert schema["additionalProperties"] is False
    for field in ("seed", "goal", "commands"):
        assert schema["properties"][field]["description"]
        assert schema["properties"][field]["examples"]
    assert TextCraftConfig.model_validate({"seed": 3}).seed == 3
    example = schema["properties"]["commands"]["examples"][0]
    TextCraft().reset(goal="craft polished granite stairs", commands=example)
