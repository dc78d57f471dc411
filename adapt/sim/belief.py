"""The executor's belief: inventory and lessons, replayed from the prompt's own trajectory.

The simulated executor is stateless between calls; every call re-reads the prompt. Its believed
inventory starts from the propagated context inventory (empty without context) and is updated
by the observations of its own trajectory: ``Got`` adds, ``Crafted`` adds the output and removes
the ingredients its action named, an ``Inventory:`` observation replaces the belief.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from adapt.sim.crafting import CraftingBook
from adapt.sim.prompt_parse import (
    TaskPrompt,
    clean_action,
    normalize_item,
    parse_count_item,
    parse_craft,
    parse_inventory,
)

_GOT = re.compile(r"^Got\s+(\d+)\s+(.+?)\s*\.?$", re.IGNORECASE)
_CRAFTED = re.compile(r"^Crafted\s+(\d+)\s+(.+?)\s*\.?$", re.IGNORECASE)
_NOT_FOUND = re.compile(r"^Could not find\s+(.+?)\s*\.?$", re.IGNORECASE)
_FAILURE_PREFIXES = ("could not", "wrong item format", "invalid", "nothing happens", "error")


def is_failure(observation: str) -> bool:
    return observation.strip().lower().startswith(_FAILURE_PREFIXES)


@dataclass(slots=True)
class Belief:
    inventory: Counter[str] = field(default_factory=Counter)
    #: the belief may be wrong (an ingredient went missing): check ``inventory`` first
    uncertain: bool = False
    failures: int = 0
    failed_actions: Counter[str] = field(default_factory=Counter)
    #: items crafted successfully during this run
    crafted: list[str] = field(default_factory=list)
    #: kind of the last observation if it was a failure (``not_enough``, ``not_found``, ...)
    last_failure: str | None = None
    #: actions of the trajectory, cleaned, in order
    actions: list[str] = field(default_factory=list)
    extra_categories: set[str] = field(default_factory=set)
    literal_items: set[str] = field(default_factory=set)
    unobtainable: set[str] = field(default_factory=set)
    #: a craft of the goal's own "using" spec was rejected as an invalid recipe
    goal_spec_rejected: bool = False
    declared: str | None = None  # a previous "Task completed!"/"Task failed!" line


def _failure_kind(observation: str) -> str:
    lowered = observation.strip().lower()
    if lowered.startswith("could not find enough items"):
        return "not_enough"
    if lowered.startswith("could not find a valid recipe"):
        return "invalid_recipe"
    if lowered.startswith("could not find"):
        return "not_found"
    if lowered.startswith("wrong item format"):
        return "format"
    return "other"


def build_belief(task: TaskPrompt, base_book: CraftingBook) -> Belief:
    """Replay the trajectory of ``task`` onto the context inventory."""
    belief = Belief()
    for name, count in (task.context_inventory or {}).items():
        belief.inventory[base_book.canonical(name)] += count
    for step in task.trajectory:
        action = clean_action(step.action)
        belief.actions.append(action)
        lowered = action.lower()
        if lowered.startswith("think") and (
            "task completed" in lowered or "task failed" in lowered
        ):
            belief.declared = action
        observation = step.observation.strip()
        if is_failure(observation):
            belief.failures += 1
            belief.failed_actions[action] += 1
            kind = _failure_kind(observation)
            belief.last_failure = kind
            _learn_from_failure(belief, base_book, action, observation, kind, goal_text(task))
            continue
        belief.last_failure = None
        _apply_observation(belief, base_book, action, observation)
    return belief


def goal_text(task: TaskPrompt) -> str:
    return task.goal.text.lower() if task.goal else ""


def _apply_observation(belief: Belief, book: CraftingBook, action: str, observation: str) -> None:
    if (match := _GOT.match(observation)) is not None:
        belief.inventory[book.canonical(normalize_item(match.group(2)))] += int(match.group(1))
        return
    if (match := _CRAFTED.match(observation)) is not None:
        output = book.canonical(normalize_item(match.group(2)))
        craft = parse_craft(action)
        if craft is not None:
            for ingredient in craft.ingredients:
                item = book.canonical(ingredient.item)
                if belief.inventory[item] < ingredient.count:
                    belief.uncertain = True
                belief.inventory[item] = max(0, belief.inventory[item] - ingredient.count)
        else:
            belief.uncertain = True
        belief.inventory[output] += int(match.group(1))
        belief.crafted.append(output)
        return
    inventory = parse_inventory(observation) if observation.startswith("Inventory") else None
    if inventory is not None:
        belief.inventory = Counter({book.canonical(k): v for k, v in inventory.items() if v > 0})
        belief.uncertain = False


def _learn_from_failure(
    belief: Belief, book: CraftingBook, action: str, observation: str, kind: str, goal: str
) -> None:
    lowered = action.lower()
    if kind == "not_found" and lowered.startswith("get "):
        match = _NOT_FOUND.match(observation)
        wanted = parse_count_item(lowered[4:])
        if match is None or wanted is None:
            return
        item = book.canonical(normalize_item(match.group(1)))
        if item != book.canonical(wanted.item):
            return  # not the item the action asked for (e.g. two actions on one line)
        if book.candidates(item) and item not in book.literal_items:
            belief.extra_categories.add(item)
        elif book.recipe_for(item) is None:
            belief.unobtainable.add(item)
    elif kind == "invalid_recipe":
        craft = parse_craft(action)
        if craft is None:
            return
        if goal.startswith("craft") and " using " in goal:
            goal_craft = parse_craft(goal)
            if goal_craft is not None and goal_craft.item == craft.item:
                belief.goal_spec_rejected = True
        recipe = book.recipe_for(book.canonical(craft.item))
        if recipe is None:
            return
        # the counts were right, so a category stand-in must have been rejected
        if sorted(i.count for i in recipe.ingredients) == sorted(
            i.count for i in craft.ingredients
        ):
            for ingredient in recipe.ingredients:
                if book.is_category(ingredient.item):
                    belief.literal_items.add(ingredient.item)
