"""The simulated TextCraft agent as executor and planner, on hand-written games."""

from __future__ import annotations

import asyncio
import math

import pytest

from adapt.llm.base import ChatModel, ChatRequest
from adapt.sim import SimTextCraftModel
from tests.sim.minicraft import (
    BEEHIVE,
    BOOKS,
    BOOKS_DEPTHS,
    PLANKS,
    MiniCraft,
    build_prompt,
    play,
)


def complete(model: SimTextCraftModel, prompt: str, **kwargs: object) -> str:
    request = ChatRequest(prompt=prompt, **kwargs)
    return asyncio.run(model.complete(request)).text


def plan_of(model: SimTextCraftModel, game: MiniCraft, goal: str, context: str = "") -> str:
    return complete(model, build_prompt(game.task_observation(goal), context, executor=False))


def test_is_a_chat_model() -> None:
    model = SimTextCraftModel()
    assert isinstance(model, ChatModel)
    assert model.simulated is True
    assert model.name == "sim:textcraft?capability=1&error_rate=0&seed=0"
    assert SimTextCraftModel(capability=1, error_rate=0.1, seed=7).name == (
        "sim:textcraft?capability=1&error_rate=0.1&seed=7"
    )


# -- executor --------------------------------------------------------------------------------
@pytest.mark.parametrize("capability", [1, 2, 3, 4])
@pytest.mark.parametrize("goal", sorted(BOOKS_DEPTHS))
def test_executor_solves_goals_up_to_its_capability(capability: int, goal: str) -> None:
    game = MiniCraft(BOOKS, goal, PLANKS)
    episode = play(SimTextCraftModel(capability=capability), game.task_observation(), game.step)
    if BOOKS_DEPTHS[goal] <= capability:
        assert episode.reward == 1.0, episode.steps
        assert episode.completed
        assert not any(obs.startswith("Could not") for _, obs in episode.steps)
    else:
        assert episode.failed
        assert len(episode.steps) == 1  # gives up at once, without wasting steps
        assert episode.reward == 0.0


def test_beehive_trajectory_at_capability_2() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    episode = play(SimTextCraftModel(capability=2), game.task_observation(), game.step)
    assert [a for a, _ in episode.steps[:-1]] == [
        "get 2 oak logs",
        "get 3 honeycomb",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "craft 1 beehive using 6 oak planks, 3 honeycomb",
    ]
    assert episode.completed and episode.reward == 1.0


def test_fetch_goal_already_held_completes_immediately() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    episode = play(
        SimTextCraftModel(),
        game.task_observation("fetch 6 oak planks"),
        game.step,
        context="Inventory: [oak planks] (8) ",
    )
    assert len(episode.steps) == 1 and episode.completed


def test_fetch_subtask_counts() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    game.inventory["oak planks"] = 2
    episode = play(
        SimTextCraftModel(),
        game.task_observation("fetch 6 oak planks"),
        game.step,
        context=game.context(),
    )
    assert [a for a, _ in episode.steps][:2] == [
        "get 1 oak logs",
        "craft 4 oak planks using 1 oak logs",
    ]
    assert episode.completed and game.inventory["oak planks"] == 6


# -- context propagation -----------------------------------------------------------------------
CRAFT_BEEHIVE = "craft 1 beehive using 6 oak planks, 3 honeycomb"


def test_craft_using_subtask_succeeds_with_propagated_inventory() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    game.inventory.update({"oak planks": 6, "honeycomb": 3})
    episode = play(
        SimTextCraftModel(capability=1),
        game.task_observation(CRAFT_BEEHIVE),
        game.step,
        context=game.context(),
    )
    assert episode.steps[0][0] == CRAFT_BEEHIVE
    assert episode.reward == 1.0 and episode.completed


def test_craft_using_subtask_fails_without_context() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    game.inventory.update({"oak planks": 6, "honeycomb": 3})  # the env has them, the model
    episode = play(  # does not know: it thinks it must make the planks too
        SimTextCraftModel(capability=1), game.task_observation(CRAFT_BEEHIVE), game.step
    )
    assert len(episode.steps) == 1 and episode.failed


def test_craft_using_subtask_fetches_missing_base_items() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    game.inventory.update({"oak planks": 6})
    episode = play(
        SimTextCraftModel(capability=1),
        game.task_observation(CRAFT_BEEHIVE),
        game.step,
        context=game.context(),
    )
    assert [a for a, _ in episode.steps[:2]] == ["get 3 honeycomb", CRAFT_BEEHIVE]
    assert episode.completed


def test_empty_inventory_context_is_trusted() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    prompt = build_prompt(
        game.task_observation("get 3 honeycomb"), "Inventory: You are not carrying anything."
    )
    assert complete(SimTextCraftModel(), prompt) == "get 3 honeycomb"


# -- reacting to failures ----------------------------------------------------------------------
def _next(game: MiniCraft, goal: str, trajectory: list[tuple[str, str]], context: str = "") -> str:
    prompt = build_prompt(game.task_observation(goal), context, trajectory)
    return complete(SimTextCraftModel(capability=2), prompt)


def test_not_enough_items_leads_to_inventory_check_and_replan() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    context = "Inventory: [oak planks] (6) [honeycomb] (3) "  # wrong: honeycomb was used up
    failed = [(CRAFT_BEEHIVE, "Could not find enough items to craft minecraft:beehive")]
    assert _next(game, CRAFT_BEEHIVE, failed, context) == "inventory"
    checked = [*failed, ("inventory", "Inventory: [oak planks] (6) ")]
    assert _next(game, CRAFT_BEEHIVE, checked, context) == "get 3 honeycomb"


def test_category_not_found_leads_to_concrete_item() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    trajectory = [("get 2 planks", "Could not find planks")]
    assert _next(game, "fetch 2 planks", trajectory) == "get 1 oak logs"


def test_not_found_teaches_a_new_category() -> None:
    commands = [
        "craft 1 campfire using 3 logs, 3 stick, 1 coals",
        "craft 4 oak planks using 1 oak logs",
        "craft 1 oak wood using 4 oak logs",
    ]
    game = MiniCraft(commands, "craft campfire")
    assert _next(game, "get 3 logs", []) == "get 3 logs"  # a material by default
    trajectory = [("get 3 logs", "Could not find logs")]
    assert _next(game, "get 3 logs", trajectory) == "get 3 oak logs"


def test_gives_up_after_repeated_failures() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    trajectory = [("get 3 honeycomb", "Could not find honeycomb")]
    assert "Task failed!" in _next(game, "get 3 honeycomb", trajectory)
    failures = [
        (f"craft 1 bee nest using {n} honeycomb", "Could not find a valid recipe for bee nest")
        for n in range(1, 5)
    ]
    assert "Task failed!" in _next(game, "craft bee nest", failures)


def test_done_after_successful_craft_using() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    trajectory = [(CRAFT_BEEHIVE, "Crafted 1 minecraft:beehive")]
    context = "Inventory: [oak planks] (6) [honeycomb] (3) "
    assert "Task completed!" in _next(game, CRAFT_BEEHIVE, trajectory, context)


def test_unknown_prompt_fails_politely() -> None:
    assert "Task failed!" in complete(SimTextCraftModel(), "Hello there.\n> ")


# -- planner -----------------------------------------------------------------------------------
def steps_of(plan: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in plan.splitlines() if line.startswith("Step ")]


def test_planner_count_arithmetic() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    plan = plan_of(SimTextCraftModel(), game, "fetch 6 oak planks")
    assert steps_of(plan) == [
        "fetch 2 oak logs",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 oak planks using 1 oak logs",
    ]
    assert plan.splitlines()[-1] == "Execution Order: (Step 1 AND Step 2 AND Step 3)"
    assert plan.splitlines()[0].startswith("# Think:")


def test_planner_one_level_with_categories_resolved() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    plan = plan_of(SimTextCraftModel(), game, "craft beehive")
    assert steps_of(plan) == [
        "fetch 6 oak planks",
        "fetch 3 honeycomb",
        "craft 1 beehive using 6 oak planks, 3 honeycomb",
    ]
    assert "logs" not in "\n".join(steps_of(plan))  # one recipe level only


def test_planner_accounts_for_the_propagated_inventory() -> None:
    # "fetch N X" means "hold at least N X": totals are written, fully held items are left out
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    held = plan_of(
        SimTextCraftModel(),
        game,
        "craft beehive",
        "Inventory: [oak planks] (2) [honeycomb] (1) ",
    )
    assert steps_of(held) == [
        "fetch 6 oak planks",
        "fetch 3 honeycomb",
        "craft 1 beehive using 6 oak planks, 3 honeycomb",
    ]
    birch = plan_of(SimTextCraftModel(), game, "craft beehive", "Inventory: [birch planks] (8) ")
    assert steps_of(birch) == [
        "fetch 3 honeycomb",
        "craft 1 beehive using 6 birch planks, 3 honeycomb",
    ]


@pytest.mark.parametrize("wanted", [1, 4, 5, 8, 13])
def test_planner_repeats_crafts(wanted: int) -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    plan = plan_of(SimTextCraftModel(), game, f"craft {wanted} stick")
    crafts = math.ceil(wanted / 4)
    assert (
        steps_of(plan)
        == [f"fetch {2 * crafts} oak planks"] + ["craft 4 stick using 2 oak planks"] * crafts
    )
    order = " AND ".join(f"Step {i}" for i in range(1, crafts + 2))
    assert plan.splitlines()[-1] == f"Execution Order: ({order})"


def test_planner_base_item_and_craft_using_goals() -> None:
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    assert steps_of(plan_of(SimTextCraftModel(), game, "fetch 3 honeycomb")) == [
        "fetch 3 honeycomb"
    ]
    plan = plan_of(SimTextCraftModel(), game, CRAFT_BEEHIVE, "Inventory: [oak planks] (6) ")
    assert steps_of(plan) == ["fetch 3 honeycomb", CRAFT_BEEHIVE]


def test_planner_output_parses_with_the_engine_parser() -> None:
    plan_parse = pytest.importorskip("adapt.engine.planning.parse")
    game = MiniCraft(BOOKS, "craft bookshelf", PLANKS)
    plan = plan_parse.parse_plan(plan_of(SimTextCraftModel(), game, "craft bookshelf"))
    assert plan.steps == [
        "fetch 6 oak planks",
        "fetch 3 book",
        "craft 1 bookshelf using 6 oak planks, 3 book",
    ]
    assert not plan.warnings


def test_adapt_style_decomposition_succeeds_at_capability_1() -> None:
    """Executor fails on beehive; the plan's sub-tasks each succeed with propagated context."""
    model = SimTextCraftModel(capability=1)
    game = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
    assert play(model, game.task_observation(), game.step).failed
    total = 0.0
    for sub_task in steps_of(plan_of(model, game, "craft beehive")):
        episode = play(model, game.task_observation(sub_task), game.step, context=game.context())
        assert episode.completed, (sub_task, episode.steps)
        total = max(total, episode.reward)
    assert total == 1.0 and game.inventory["beehive"] == 1
