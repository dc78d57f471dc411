from __future__ import annotations

from adapt.sim.prompt_parse import (
    CraftCommand,
    Ingredient,
    clean_action,
    detect_role,
    parse_craft,
    parse_goal,
    parse_inventory,
    parse_prompt,
)
from tests.sim.minicraft import BEEHIVE, PLANKS, MiniCraft, build_prompt


def test_live_task_is_after_the_last_crafting_commands() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    prompt = build_prompt(game.task_observation())
    task = parse_prompt(prompt)
    assert task.role == "executor"
    assert task.goal is not None and task.goal.item == "beehive" and task.goal.kind == "craft"
    # the demo's dark oak commands are not part of the live task
    assert [c.item for c in task.commands] == [
        "beehive",
        "oak planks",
        "birch planks",
        "bee nest",
        "stick",
    ]
    assert task.commands[0] == CraftCommand(
        1, "beehive", (Ingredient(6, "planks"), Ingredient(3, "honeycomb"))
    )
    assert task.trajectory == ()
    assert task.context_inventory is None
    assert "dark oak" not in task.live_task


def test_context_and_trajectory() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    prompt = build_prompt(
        game.task_observation("fetch 6 oak planks"),
        "Inventory: [oak planks] (4) [stick] (1) ",
        [
            ("get 1 oak logs", "Got 1 oak logs"),
            ("think: next I craft.", "OK."),
            ("inventory", "Inventory: [oak logs] (1) [oak planks] (4) [stick] (1) "),
        ],
    )
    task = parse_prompt(prompt)
    assert task.context_inventory == {"oak planks": 4, "stick": 1}
    assert [s.action for s in task.trajectory] == [
        "get 1 oak logs",
        "think: next I craft.",
        "inventory",
    ]
    assert task.trajectory[2].observation.startswith("Inventory: [oak logs] (1)")
    assert task.goal is not None
    assert (task.goal.kind, task.goal.count, task.goal.item) == ("fetch", 6, "oak planks")


def test_empty_context_inventory() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    prompt = build_prompt(game.task_observation(), "Inventory: You are not carrying anything.")
    assert parse_prompt(prompt).context_inventory == {}


def test_planner_role_has_no_trajectory() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    prompt = build_prompt(game.task_observation(), "", executor=False)
    task = parse_prompt(prompt)
    assert task.role == "planner"
    assert task.trajectory == ()
    assert detect_role("abc\n> ") == "executor"
    assert detect_role("abc\n>") == "executor"
    assert detect_role("Goal: craft x.\n\n") == "planner"


def test_goal_forms() -> None:
    fetch = parse_goal("Goal: fetch 6 dark oak planks.")
    assert fetch is not None and (fetch.kind, fetch.count, fetch.item) == (
        "fetch",
        6,
        "dark oak planks",
    )
    get = parse_goal("get 2 stick")
    assert get is not None and (get.kind, get.count, get.item) == ("fetch", 2, "stick")
    craft = parse_goal("craft beehive")
    assert craft is not None and (craft.kind, craft.count, craft.item) == ("craft", 1, "beehive")
    assert craft.ingredients is None and not craft.explicit_count
    two = parse_goal("craft 2 stick.")
    assert two is not None and (two.count, two.item, two.explicit_count) == (2, "stick", True)
    using = parse_goal("craft 1 beehive using 6 oak planks, 3 honeycomb")
    assert using is not None and using.ingredients == (
        Ingredient(6, "oak planks"),
        Ingredient(3, "honeycomb"),
    )
    no_count = parse_goal("Craft Dark Oak Sign using 6 dark oak planks, 1 stick.")
    assert no_count is not None and (no_count.count, no_count.item) == (1, "dark oak sign")
    assert parse_goal("dance a little") is None


def test_craft_and_inventory_parsing_is_lenient() -> None:
    assert parse_craft("craft 4 stick using 2 planks") == CraftCommand(
        4, "stick", (Ingredient(2, "planks"),)
    )
    assert parse_craft("> craft 4  Oak_Planks using 1 oak logs.") == CraftCommand(
        4, "oak planks", (Ingredient(1, "oak logs"),)
    )
    assert parse_craft("get 1 oak logs") is None
    assert parse_inventory("Inventory: [oak planks] (4) [stick] (1) ") == {
        "oak planks": 4,
        "stick": 1,
    }
    assert parse_inventory("Inventory: You are not carrying anything.") == {}
    assert parse_inventory("Got 1 stick") is None
    assert clean_action("> get 1 stick") == "get 1 stick"
    assert clean_action("Action: inventory") == "inventory"
