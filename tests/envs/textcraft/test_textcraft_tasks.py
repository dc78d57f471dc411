"""Task sets: the paper's proportions, stable ids, configs that reproduce the game."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from adapt.envs.textcraft import Task, TextCraft, tasks
from adapt.envs.textcraft.book import load_book
from adapt.envs.textcraft.task_sets import TEST_DEPTH2, pinned_test_goals
from adapt.errors import InvalidConfig

BOOK = load_book()


def by_depth(items: list[Task]) -> dict[int, int]:
    return dict(sorted(Counter(t.depth for t in items).items()))


def test_split_proportions() -> None:
    goals_by_depth = Counter(BOOK.depth(g) for g in BOOK.goals)
    test, dev, every = tasks("test"), tasks("dev"), tasks("all")
    assert by_depth(test) == {2: 77, 3: goals_by_depth[3], 4: goals_by_depth[4]}
    assert by_depth(dev) == {2: goals_by_depth[2] - 77}
    assert len(every) == len(test) + len(dev) == len(BOOK.goals)
    assert {t.id for t in test}.isdisjoint({t.id for t in dev})
    assert 190 <= len(test) <= 210  # "about 200 tasks"
    # what the recipe data gives today (the paper: 297 / 123 / 11 with its own table)
    assert by_depth(every) == {2: 275, 3: 111, 4: 11}


def test_the_depth2_test_goals_are_pinned() -> None:
    """The split survives changes of the recipe data: the 77 depth-2 test goals are a list."""
    pinned = pinned_test_goals()
    assert len(pinned) == TEST_DEPTH2
    assert {t.item for t in tasks("test", depth=2)} == pinned
    # chiseled quartz block was a dev goal of depth 2 before the recipe table; no test goal moved
    assert BOOK.depth("chiseled_quartz_block") == 1
    assert {"crimson_fence", "glistering_melon_slice", "ladder", "wooden_axe"} <= pinned


def test_depth_filter_and_order() -> None:
    assert all(t.depth == 3 for t in tasks("test", depth=3))
    assert len(tasks("all", depth=4)) == 11
    assert tasks("dev", depth=3) == []
    every = tasks("all")
    assert every == sorted(every, key=lambda t: (t.depth, t.item))


def test_default_split_is_test() -> None:
    assert tasks() == tasks("test")


def test_task_fields() -> None:
    task = next(t for t in tasks("all") if t.item == "beehive")
    assert task.id == "textcraft/beehive"
    assert task.goal == "craft beehive"
    assert task.depth == 2
    assert task.split in ("dev", "test")
    assert task.config == {"goal": "craft beehive"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.goal = "craft stick"  # type: ignore[misc]
    assert len({t.id for t in tasks("all")}) == len(tasks("all"))


def test_task_config_reproduces_the_exact_game() -> None:
    a, b = TextCraft(), TextCraft()
    for task in tasks("test")[::10]:
        first = a.reset(**task.config)
        a.reset(seed=1)  # something else in between
        assert b.reset(**task.config) == first
        assert a.reset(**task.config) == first
        assert a.goal == task.goal
        assert a.goal_depth(task.goal) == task.depth


def test_tasks_are_deterministic() -> None:
    assert [t.id for t in tasks("test")] == [t.id for t in tasks("test")]
    # a fresh list each call: callers may mutate it freely
    listing = tasks("dev")
    listing.clear()
    assert tasks("dev")


def test_unknown_split() -> None:
    with pytest.raises(InvalidConfig, match="unknown split"):
        tasks("train")  # type: ignore[arg-type]
