"""TextCraft task sets with the paper's proportions (section 4.1).

- ``test``: every goal of recipe depth 3 and 4 (and deeper, if any) plus 77 depth-2 goals;
- ``dev``: the remaining depth-2 goals;
- ``all``: both.

The 77 depth-2 test goals are a fixed list (``test-split.txt``, package data: drawn once from a
SHA-256-seeded sample and pinned), so the split is the same in every process and survives
changes of the recipe data. A task's ``config`` is ``{"goal": "craft <item>"}``:
``TextCraft().reset(**task.config)`` generates that goal's game deterministically.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from adapt.envs.textcraft.book import MIN_GOAL_DEPTH, load_book
from adapt.envs.textcraft.recipes import display
from adapt.errors import InvalidConfig

Split = Literal["dev", "test", "all"]

#: depth-2 goals in the test split (the paper: 77 of 297)
TEST_DEPTH2 = 77
SPLIT_FILE = "test-split.txt"


def pinned_test_goals() -> frozenset[str]:
    """The pinned depth-2 goals of the test split (``test-split.txt``)."""
    text = resources.files("adapt.envs.textcraft").joinpath(SPLIT_FILE).read_text("utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


@dataclass(frozen=True, slots=True)
class Task:
    """One TextCraft task: a goal item and how to reproduce its game."""

    #: stable id, e.g. ``textcraft/beehive``
    id: str
    #: the goal string, e.g. ``craft beehive``
    goal: str
    #: the goal item id, e.g. ``beehive``
    item: str
    #: the goal's recipe depth (2, 3 or 4)
    depth: int
    #: ``dev`` or ``test``
    split: str

    @property
    def config(self) -> dict[str, Any]:
        """``environment_config`` for this task: ``env.reset(**task.config)``."""
        return {"goal": self.goal}


@cache
def _all_tasks() -> tuple[Task, ...]:
    book = load_book()
    goals = sorted(book.goals, key=lambda g: (book.depth(g), g))
    test2 = pinned_test_goals()
    stale = sorted(g for g in test2 if g not in book.goals or book.depth(g) != MIN_GOAL_DEPTH)
    if stale:
        raise RuntimeError(f"{SPLIT_FILE}: not depth-{MIN_GOAL_DEPTH} goals of the book: {stale}")
    out: list[Task] = []
    for item in goals:
        depth = book.depth(item)
        split = "test" if depth > MIN_GOAL_DEPTH or item in test2 else "dev"
        out.append(Task(f"textcraft/{item}", f"craft {display(item)}", item, depth, split))
    return tuple(out)


def tasks(split: Split = "test", depth: int | None = None) -> list[Task]:
    """The tasks of a split (``dev``, ``test`` or ``all``), optionally of one recipe depth;
    sorted by depth, then item id."""
    if split not in ("dev", "test", "all"):
        raise InvalidConfig(f"textcraft: unknown split {split!r}; use 'dev', 'test' or 'all'")
    return [
        t
        for t in _all_tasks()
        if (split == "all" or t.split == split) and (depth is None or t.depth == depth)
    ]
