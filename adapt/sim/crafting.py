"""What the simulated model "knows" about crafting: only the commands listed in the prompt.

``CraftingBook`` answers: which command makes an item, whether an ingredient is a category
(``planks``, ``wool``) and which concrete item to use for it, and how deep an item's recipe tree
is. ``plan_acquisition`` turns a goal plus a believed inventory into an ordered list of
environment actions (all ``get`` actions first, then the crafts) and the craft depth it needed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from adapt.sim.prompt_parse import CraftCommand, Ingredient

#: ingredient names treated as categories (Minecraft item tags any member satisfies, not items
#: themselves) when concrete members (``<x> planks``) are mentioned in the crafting commands.
#: Other tags (``logs``, ``coals``) are fetchable materials; a ``Could not find <name>`` for a
#: ``get`` teaches the model that a name is a category after all.
KNOWN_CATEGORIES = frozenset({"planks", "wool"})

_MAX_DEPTH = 32


class PlanImpossible(Exception):
    """The model sees no way to obtain something it needs."""


@dataclass(frozen=True, slots=True)
class Action:
    kind: Literal["get", "craft"]
    item: str
    count: int
    ingredients: tuple[Ingredient, ...] = ()
    #: for ``get`` of a concrete item chosen for a category: the category name
    category: str | None = None

    def render(self) -> str:
        if self.kind == "get":
            return f"get {self.count} {self.item}"
        using = ", ".join(i.render() for i in self.ingredients)
        return f"craft {self.count} {self.item} using {using}"


@dataclass(slots=True)
class Plan:
    actions: list[Action] = field(default_factory=list)
    #: the number of craft levels the plan needs (0: only ``get`` actions)
    depth: int = 0


class CraftingBook:
    """The crafting commands of one task, plus what the model learned from failures."""

    def __init__(
        self,
        commands: Sequence[CraftCommand],
        *,
        extra_categories: Iterable[str] = (),
        literal_items: Iterable[str] = (),
        unobtainable: Iterable[str] = (),
    ) -> None:
        self.commands = tuple(commands)
        self._order: dict[str, int] = {}
        self._recipes: dict[str, list[CraftCommand]] = {}
        for command in self.commands:
            self._recipes.setdefault(command.item, []).append(command)
            for name in (command.item, *(i.item for i in command.ingredients)):
                self._order.setdefault(name, len(self._order))
        self.extra_categories = set(extra_categories)
        self.literal_items = set(literal_items)
        self.unobtainable = set(unobtainable)
        self._depth_cache: dict[str, int] = {}

    @property
    def items(self) -> list[str]:
        return list(self._order)

    def canonical(self, name: str) -> str:
        """Map a name onto one the commands use, forgiving singular/plural differences."""
        if name in self._order:
            return name
        variants = [name + "s", name + "es"]
        if name.endswith("es"):
            variants.append(name[:-2])
        if name.endswith("s"):
            variants.append(name[:-1])
        for variant in variants:
            if variant in self._order:
                return variant
        return name

    def candidates(self, category: str) -> list[str]:
        suffix = " " + category
        return [item for item in self._order if item.endswith(suffix) and item != category]

    def is_category(self, name: str) -> bool:
        if name in self._recipes or name in self.literal_items:
            return False
        known = name in KNOWN_CATEGORIES or name in self.extra_categories
        return known and bool(self.candidates(name))

    def resolve(self, name: str, inventory: Mapping[str, int]) -> str:
        """A concrete item for ``name``: itself, or for a category the member to use.

        Prefers a member the inventory holds (most first), then the shallowest recipe, then the
        member mentioned first in the commands. Deterministic.
        """
        if not self.is_category(name):
            return name
        members = self.candidates(name)
        held = [m for m in members if inventory.get(m, 0) > 0]
        if held:
            return min(held, key=lambda m: (-inventory.get(m, 0), self._order[m]))
        obtainable = [m for m in members if m not in self.unobtainable] or members
        return min(obtainable, key=lambda m: (self.depth(m), self._order[m]))

    def depth(self, item: str, _stack: frozenset[str] = frozenset()) -> int:
        """Recipe-tree depth: 0 for a base item, else 1 + the deepest ingredient (min recipe)."""
        if item in self._depth_cache:
            return self._depth_cache[item]
        if item in _stack or len(_stack) > _MAX_DEPTH:
            return _MAX_DEPTH
        recipes = self._recipes.get(item)
        if not recipes:
            if self.is_category(item):
                members = self.candidates(item)
                return min(self.depth(m, _stack | {item}) for m in members)
            return 0
        best = min(self._recipe_depth(r, _stack | {item}) for r in recipes)
        if not _stack:
            self._depth_cache[item] = best
        return best

    def _recipe_depth(self, recipe: CraftCommand, stack: frozenset[str]) -> int:
        return 1 + max(self.depth(i.item, stack) for i in recipe.ingredients)

    def recipe_for(self, item: str) -> CraftCommand | None:
        """The command used to make ``item``: the shallowest one, ties to the first listed."""
        recipes = self._recipes.get(item)
        if not recipes:
            return None
        return min(recipes, key=lambda r: self._recipe_depth(r, frozenset({item})))

    def resolve_ingredients(
        self, ingredients: Iterable[Ingredient], inventory: Mapping[str, int]
    ) -> tuple[Ingredient, ...]:
        """Ingredients with categories replaced by concrete items (merging duplicates)."""
        merged: dict[str, int] = {}
        for ingredient in ingredients:
            item = self.resolve(ingredient.item, inventory)
            merged[item] = merged.get(item, 0) + ingredient.count
        return tuple(Ingredient(count, item) for item, count in merged.items())


class _Acquirer:
    def __init__(self, book: CraftingBook, inventory: Mapping[str, int]) -> None:
        self.book = book
        self.inventory: Counter[str] = Counter({k: v for k, v in inventory.items() if v > 0})
        self.gets: dict[str, Action] = {}
        self.crafts: list[Action] = []

    def acquire(self, item: str, count: int, stack: frozenset[str]) -> None:
        """Make sure ``count`` of ``item`` are held (appending the actions needed)."""
        if self.inventory[item] >= count:
            return
        if item in stack or len(stack) > _MAX_DEPTH:
            raise PlanImpossible(f"{item} needs itself")
        missing = count - self.inventory[item]
        recipe = self.book.recipe_for(item)
        if recipe is None:
            if item in self.book.unobtainable:
                raise PlanImpossible(f"I cannot find {item}")
            self._get(item, missing)
            return
        crafts = math.ceil(missing / recipe.count)
        ingredients = self.book.resolve_ingredients(recipe.ingredients, self.inventory)
        self.gather(ingredients, crafts, stack | {item})
        for _ in range(crafts):
            self.craft(Action("craft", item, recipe.count, ingredients))

    def gather(self, ingredients: Sequence[Ingredient], times: int, stack: frozenset[str]) -> None:
        """Hold ``times`` x every ingredient at once (acquiring one may consume another)."""
        for _ in range(4):
            short = [i for i in ingredients if self.inventory[i.item] < i.count * times]
            if not short:
                return
            for ingredient in short:
                self.acquire(ingredient.item, ingredient.count * times, stack)
        raise PlanImpossible("the ingredients compete for the same items")

    def _get(self, item: str, count: int) -> None:
        previous = self.gets.get(item)
        total = count + (previous.count if previous else 0)
        self.gets[item] = Action("get", item, total)
        self.inventory[item] += count

    def craft(self, action: Action) -> None:
        for ingredient in action.ingredients:
            self.inventory[ingredient.item] -= ingredient.count
        self.inventory[action.item] += action.count
        self.crafts.append(action)

    def plan(self, depth: int) -> Plan:
        gets = [self._tag_category(a) for a in self.gets.values()]
        return Plan(actions=[*gets, *self.crafts], depth=depth)

    def _tag_category(self, action: Action) -> Action:
        for category in sorted(KNOWN_CATEGORIES | self.book.extra_categories):
            if action.item.endswith(" " + category) and self.book.is_category(category):
                return Action("get", action.item, action.count, category=category)
        return action


def required_depth(
    book: CraftingBook,
    item: str,
    count: int,
    inventory: Mapping[str, int],
    _stack: frozenset[str] = frozenset(),
) -> int:
    """Craft levels needed to hold ``count`` x ``item``: 0 if held or fetchable, else 1 + the
    deepest ingredient still missing (judged against ``inventory``, before any action)."""
    held = inventory.get(item, 0)
    if held >= count:
        return 0
    recipe = book.recipe_for(item)
    if recipe is None:
        return 0
    if item in _stack or len(_stack) > _MAX_DEPTH:
        return _MAX_DEPTH
    crafts = math.ceil((count - held) / recipe.count)
    return 1 + _ingredients_depth(
        book,
        book.resolve_ingredients(recipe.ingredients, inventory),
        crafts,
        inventory,
        _stack | {item},
    )


def _ingredients_depth(
    book: CraftingBook,
    ingredients: Iterable[Ingredient],
    times: int,
    inventory: Mapping[str, int],
    stack: frozenset[str],
) -> int:
    return max(
        (required_depth(book, i.item, i.count * times, inventory, stack) for i in ingredients),
        default=0,
    )


def plan_acquisition(
    book: CraftingBook,
    item: str,
    count: int,
    inventory: Mapping[str, int],
) -> Plan:
    """Actions that bring the inventory to ``count`` x ``item`` (``item`` already resolved)."""
    acquirer = _Acquirer(book, inventory)
    acquirer.acquire(item, count, frozenset())
    return acquirer.plan(required_depth(book, item, count, inventory))


def plan_craft_once(
    book: CraftingBook,
    craft: Action,
    inventory: Mapping[str, int],
) -> Plan:
    """Actions that gather ``craft``'s ingredients and then perform ``craft`` once."""
    acquirer = _Acquirer(book, inventory)
    acquirer.gather(craft.ingredients, 1, frozenset({craft.item}))
    acquirer.craft(craft)
    depth = 1 + _ingredients_depth(book, craft.ingredients, 1, inventory, frozenset({craft.item}))
    return acquirer.plan(depth)
