"""Every action and observation string of TextCraft."""

from __future__ import annotations

import pytest

from adapt.envs.base import Environment, StepResult
from adapt.envs.textcraft import TextCraft
from adapt.errors import UserError

BEEHIVE_COMMANDS = [
    "craft 1 beehive using 6 planks, 3 honeycomb",
    "craft 4 oak planks using 1 oak logs",
    "craft 4 birch planks using 1 birch logs",
    "craft 4 stick using 2 planks",
]


@pytest.fixture
def env() -> TextCraft:
    env = TextCraft()
    env.reset(goal="craft beehive", commands=BEEHIVE_COMMANDS)
    return env


def obs(env: TextCraft, action: str) -> str:
    return env.step(action).observation


def test_protocol_members() -> None:
    env = TextCraft()
    assert isinstance(env, Environment)
    assert TextCraft.name == "textcraft"
    assert TextCraft.default_max_steps == 20
    assert "get" in TextCraft.action_grammar and "craft" in TextCraft.action_grammar
    assert "inventory" in TextCraft.action_grammar
    assert TextCraft.description
    assert env.goal == ""
    env.close()


def test_step_before_reset_is_an_error() -> None:
    with pytest.raises(UserError, match="reset"):
        TextCraft().step("inventory")


# -- inventory -----------------------------------------------------------------------------------
def test_inventory_empty_and_listed(env: TextCraft) -> None:
    assert obs(env, "inventory") == "Inventory: You are not carrying anything."
    obs(env, "get 2 oak logs")
    obs(env, "craft 4 oak planks using 1 oak logs")
    assert obs(env, "inventory") == "Inventory: [oak logs] (1) [oak planks] (4) "
    obs(env, "craft 4 oak planks using 1 oak logs")  # the last log is used up: entry removed
    assert obs(env, "inventory") == "Inventory: [oak planks] (8) "
    obs(env, "craft 4 stick using 2 oak planks")
    assert obs(env, "inventory") == "Inventory: [oak planks] (6) [stick] (4) "


def test_inventory_is_a_prefix_as_in_the_reference(env: TextCraft) -> None:
    obs(env, "get 3 honeycomb")
    want = "Inventory: [honeycomb] (3) "
    assert obs(env, "inventory:") == obs(env, "Inventory: please") == want
    assert obs(env, "inventor") == "Could not execute inventor"


def test_salient_state_is_the_inventory_observation(env: TextCraft) -> None:
    assert env.salient_state() == obs(env, "inventory")
    obs(env, "get 3 honeycomb")
    assert env.salient_state() == obs(env, "inventory") == "Inventory: [honeycomb] (3) "


# -- get -----------------------------------------------------------------------------------------
def test_get_base_items(env: TextCraft) -> None:
    assert obs(env, "get 2 oak logs") == "Got 2 oak logs"
    assert obs(env, "get 3 honeycomb") == "Got 3 honeycomb"
    assert obs(env, "get 1 diamond") == "Got 1 diamond"
    assert obs(env, "get 1 oak log") == "Got 1 oak log"  # a member of a material tag
    assert env.inventory == {"oak_logs": 2, "honeycomb": 3, "diamond": 1, "oak_log": 1}


@pytest.mark.parametrize("item", ["iron ingot", "honey block", "gold ingot", "coal", "coals"])
def test_raw_materials_whose_recipes_were_dropped_can_be_fetched(env: TextCraft, item: str) -> None:
    assert obs(env, f"get 9 {item}") == f"Got 9 {item}"


def test_get_case_and_spaces(env: TextCraft) -> None:
    assert obs(env, "  GET 2   Oak    Logs  ") == "Got 2 oak logs"
    assert obs(env, "get 1 dark_oak_logs") == "Got 1 dark oak logs"
    assert obs(env, "get 1 oak logs.") == "Got 1 oak logs"
    assert env.inventory == {"oak_logs": 3, "dark_oak_logs": 1}


@pytest.mark.parametrize(
    ("action", "observation"),
    [
        ("get 4 oak planks", "Could not find oak planks"),  # craftable
        ("get 2 planks", "Could not find planks"),  # a category is not an item
        ("get 1 wool", "Could not find wool"),
        ("get 1 stick", "Could not find stick"),
        ("get 1 beehive", "Could not find beehive"),
        ("get 1 unobtainium", "Could not find unobtainium"),
        ("get 0 oak logs", "Could not execute get 0 oak logs"),
        ("get oak logs", "Could not execute get oak logs"),
    ],
)
def test_get_failures(env: TextCraft, action: str, observation: str) -> None:
    result = env.step(action)
    assert result.observation == observation
    assert env.is_failure(result.observation)
    assert env.inventory == {}


# -- craft ---------------------------------------------------------------------------------------
def test_craft_consumes_inputs_and_reports_the_id(env: TextCraft) -> None:
    obs(env, "get 1 oak logs")
    assert obs(env, "craft 4 oak planks using 1 oak logs") == "Crafted 4 minecraft:oak_planks"
    assert env.inventory == {"oak_planks": 4}


def test_category_ingredient_takes_a_held_member(env: TextCraft) -> None:
    obs(env, "get 1 oak logs")
    obs(env, "craft 4 oak planks using 1 oak logs")
    # naming the category itself fails: a category is never held
    assert (
        obs(env, "craft 4 stick using 2 planks")
        == "Could not find enough items to craft minecraft:stick"
    )
    assert obs(env, "craft 4 stick using 2 oak planks") == "Crafted 4 minecraft:stick"
    assert env.inventory == {"oak_planks": 2, "stick": 4}


def test_material_tag_member_satisfies_the_tag(env: TextCraft) -> None:
    assert obs(env, "get 1 stripped oak log") == "Got 1 stripped oak log"
    assert (
        obs(env, "craft 4 oak planks using 1 stripped oak log") == "Crafted 4 minecraft:oak_planks"
    )
    assert obs(env, "get 1 oak wood") == "Could not find oak wood"  # 4 oak log -> 3 oak wood
    obs(env, "get 1 birch logs")
    # but not a member of another tag
    assert (
        obs(env, "craft 4 oak planks using 1 birch logs")
        == "Could not find a valid recipe for oak planks"
    )


def test_output_count_is_informational(env: TextCraft) -> None:
    obs(env, "get 2 oak logs")
    assert obs(env, "craft oak planks using 1 oak logs") == "Crafted 4 minecraft:oak_planks"
    assert obs(env, "craft 1 oak planks using 1 oak logs") == "Crafted 4 minecraft:oak_planks"
    assert env.inventory == {"oak_planks": 8}


def test_craft_needs_exact_counts(env: TextCraft) -> None:
    obs(env, "get 4 oak logs")
    assert (
        obs(env, "craft 8 oak planks using 2 oak logs")
        == "Could not find a valid recipe for oak planks"
    )
    assert env.inventory == {"oak_logs": 4}  # nothing consumed on failure


def test_craft_without_enough_items(env: TextCraft) -> None:
    assert (
        obs(env, "craft 4 oak planks using 1 oak logs")
        == "Could not find enough items to craft minecraft:oak_planks"
    )
    obs(env, "get 1 oak logs")
    assert (
        obs(env, "craft 1 beehive using 6 oak planks, 3 honeycomb")
        == "Could not find enough items to craft minecraft:beehive"
    )


def test_craft_unknown_or_uncraftable_output(env: TextCraft) -> None:
    obs(env, "get 1 oak logs")
    assert (
        obs(env, "craft 1 diamond using 1 oak logs") == "Could not find a valid recipe for diamond"
    )
    assert (
        obs(env, "craft 1 magic wand using 1 oak logs")
        == "Could not find a valid recipe for magic wand"
    )
    assert (
        obs(env, "craft 1 magic wand using 2 oak logs")
        == "Could not find enough items to craft minecraft:magic_wand"
    )


def test_wrong_item_format(env: TextCraft) -> None:
    assert obs(env, "craft 4 stick using oak planks") == "Wrong item format: oak planks"
    assert (
        obs(env, "craft 4 stick using 2 oak planks, two sticks") == "Wrong item format: two sticks"
    )


@pytest.mark.parametrize("action", ["dance", "craft", "craft 4 stick", "look around", "get"])
def test_could_not_execute(env: TextCraft, action: str) -> None:
    assert obs(env, action) == f"Could not execute {action}"


def test_craft_accepts_case_and_spacing(env: TextCraft) -> None:
    obs(env, "get 1 oak logs")
    assert obs(env, "Craft 4  Oak Planks  using  1 OAK LOGS") == "Crafted 4 minecraft:oak_planks"
    assert obs(env, "craft 4 stick using 2 oak_planks") == "Crafted 4 minecraft:stick"


def test_recipe_book_recipes_work_beyond_the_listed_commands(env: TextCraft) -> None:
    obs(env, "get 3 oak logs")
    obs(env, "craft 4 oak planks using 1 oak logs")
    assert (
        obs(env, "craft 1 crafting table using 4 oak planks")
        == "Crafted 1 minecraft:crafting_table"
    )


def test_reward_and_done_only_when_the_goal_is_crafted(env: TextCraft) -> None:
    steps = [
        "get 2 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "get 3 honeycomb",
    ]
    for action in steps:
        result = env.step(action)
        assert (result.reward, result.done) == (0.0, False)
    final = env.step("craft 1 beehive using 6 oak planks, 3 honeycomb")
    assert final == StepResult("Crafted 1 minecraft:beehive", 1.0, True, {"success": True})
    assert env.inventory == {"oak_planks": 2, "beehive": 1}


def test_think_is_ok(env: TextCraft) -> None:
    result = env.step("think: I need planks first.")
    assert result.observation == "OK."
    assert not env.is_failure(result.observation)


def test_is_failure_classification(env: TextCraft) -> None:
    failures = [
        "Could not find stick",
        "Could not find enough items to craft minecraft:stick",
        "Could not find a valid recipe for stick",
        "Wrong item format: two sticks",
        "Could not execute dance",
    ]
    for text in failures:
        assert env.is_failure(text), text
    successes = [
        "Got 1 oak logs",
        "Crafted 4 minecraft:stick",
        "Inventory: You are not carrying anything.",
        "Inventory: [stick] (4) ",
        "OK.",
    ]
    for text in successes:
        assert not env.is_failure(text), text


# -- observations for goals ---------------------------------------------------------------------
def test_task_observation(env: TextCraft) -> None:
    root = env.reset(goal="craft beehive", commands=BEEHIVE_COMMANDS)
    assert env.goal == "craft beehive"
    assert env.task_observation("craft beehive") == root
    assert env.task_observation("craft beehive.") == root
    commands = "\n".join(BEEHIVE_COMMANDS)
    assert root == f"Crafting commands:\n{commands}\n\nGoal: craft beehive."
    assert (
        env.task_observation("fetch 6 oak planks")
        == f"Crafting commands:\n{commands}\n\nGoal: fetch 6 oak planks."
    )


def test_goal_depth_and_recipe_commands() -> None:
    env = TextCraft()
    assert env.goal_depth("polished granite stairs") == 4
    assert env.goal_depth("craft beehive") == 2
    assert env.goal_depth("Oak Logs") == 0
    assert "craft 4 stick using 2 planks" in env.recipe_commands()
