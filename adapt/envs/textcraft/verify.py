"""TextCraft goal verification: which sub-goals the game state decides, and how.

Goal forms (case, spaces, a leading ``Step N:`` and a final ``.`` ignored; no count means 1):

- ``fetch N item`` / ``get N item`` / ``obtain N item`` -- **hold**: confirmed when the inventory
  holds at least N of the item at the time of the check, whoever fetched or crafted it (the
  planner's own rule: "fetch 6 oak planks means: end up holding at least 6 oak planks"). A hold
  goal can be satisfied before its node starts; the controller then skips the node.
- ``craft N item`` (with or without ``using ...``) -- **gain**: confirmed when at least N of the
  item were produced (crafted or fetched) since the node started, even if some were used up
  again later in the node. Two identical craft steps therefore need two crafts; a gain goal is
  never satisfied before its node starts.
- the root goal (the episode's ``craft <goal item>``) -- by the **reward**: confirmed once the
  goal item entered the inventory (reward 1), refuted until then.

Tags count by their members: ``fetch 6 planks`` holds with 4 oak planks and 2 birch planks;
``fetch 2 oak logs`` counts the fetched ``oak logs`` and any held ``oak log``. A plural the
book does not know (``sticks``) is read as its singular. Any other text is ``unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from adapt.envs.textcraft.book import RecipeBook
from adapt.envs.textcraft.recipes import display
from adapt.envs.verdicts import UNKNOWN, Verification, same_goal

_STEP = re.compile(r"^step\s*\d+\s*:\s*")
_FORM = re.compile(
    r"^(craft|get|fetch|obtain)\s+(?:(\d+)\s+)?(.+?)(?:\s+using\s+.+)?$"
)
HOLD_VERBS = ("get", "fetch", "obtain")


@dataclass(frozen=True, slots=True)
class GoalForm:
    """A parsed checkable goal: ``gain`` or ``hold`` ``count`` of ``item`` (an id or tag)."""

    mode: str  # "gain" | "hold"
    count: int
    item: str


def _resolve(book: RecipeBook, text: str) -> str | None:
    name = book.resolve(text)
    if name is None and text.endswith("s"):
        name = book.resolve(text[:-1])
    return name


def parse_goal_form(book: RecipeBook, goal: str) -> GoalForm | None:
    """The checkable form of a goal text, or ``None`` when TextCraft cannot decide it."""
    text = " ".join(goal.lower().split()).rstrip(".").strip()
    text = _STEP.sub("", text)
    m = _FORM.fullmatch(text)
    if m is None:
        return None
    verb, count, item_text = m.group(1), m.group(2), m.group(3)
    name = _resolve(book, item_text)
    if name is None:
        return None
    n = int(count) if count is not None else 1
    if n < 1:
        return None
    return GoalForm("hold" if verb in HOLD_VERBS else "gain", n, name)


def count_of(book: RecipeBook, counts: Mapping[str, int], item: str) -> int:
    """How many of ``item`` ``counts`` has, a tag counted by itself and its members."""
    return sum(n for held, n in counts.items() if book.satisfies(held, item))


def verify_goal(
    book: RecipeBook,
    goal: str,
    *,
    inventory: Mapping[str, int],
    produced: Mapping[str, int],
    produced_at_start: Mapping[str, int] | None,
    root_goal: str | None = None,
    solved: bool = False,
) -> Verification:
    """The verdict on ``goal`` (see the module docstring). ``produced``: cumulative production
    counters; ``produced_at_start``: their value when the goal's node started (``None``: the
    episode's start). ``root_goal``: the episode's goal text (decided by ``solved``)."""
    if root_goal is not None and same_goal(goal, root_goal):
        if solved:
            return Verification("confirmed", "the goal item was crafted (reward 1)")
        return Verification("refuted", "the goal item has not been crafted (reward 0)")
    form = parse_goal_form(book, goal)
    if form is None:
        return UNKNOWN
    name = display(form.item)
    if form.mode == "hold":
        held = count_of(book, inventory, form.item)
        evidence = f"holds {held} of {form.count} {name}"
        return Verification("confirmed" if held >= form.count else "refuted", evidence)
    before = count_of(book, produced_at_start or {}, form.item)
    gained = count_of(book, produced, form.item) - before
    evidence = f"made {gained} of {form.count} {name} in this sub-task"
    return Verification("confirmed" if gained >= form.count else "refuted", evidence)
