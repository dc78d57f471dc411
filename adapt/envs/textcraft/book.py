"""The recipe book: normalised recipes plus the indexes the game needs (read-only, shared).

``load_book()`` builds it once per process; every ``TextCraft`` instance shares it.

Names are ids (``oak_planks``); three kinds:

- items (``items.json``): fetchable with ``get`` when the book has no recipe for them;
- material tags (``oak_logs``): fetchable; a held member satisfies the ingredient too;
- categories (``planks``, ``wool``): satisfied by any held member; never fetched or held.

Depth: base names 0; a recipe's depth is the max over its inputs of input depth + 1; an item's
depth is the min over its recipes; a category's depth is the min over its members.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from types import MappingProxyType

from adapt.envs.textcraft.recipes import (
    Recipe,
    RecipeData,
    build_recipe_data,
    canonical,
    display,
)
from adapt.envs.textcraft.tags import Tag, load_tags

logger = logging.getLogger(__name__)

#: the paper's games use goals of recipe depth 2 and more
MIN_GOAL_DEPTH = 2


class RecipeBook:
    """Read-only index over the normalised recipes; see the module docstring."""

    def __init__(self, data: RecipeData, tags: Mapping[str, Tag]) -> None:
        self.data = data
        self.recipes: tuple[Recipe, ...] = data.recipes
        self.recipe_set: frozenset[Recipe] = frozenset(data.recipes)
        self.tags: Mapping[str, Tag] = MappingProxyType(dict(tags))
        self.categories = frozenset(t.name for t in tags.values() if t.kind == "category")
        self.materials = frozenset(t.name for t in tags.values() if t.kind == "material")
        self.members: Mapping[str, frozenset[str]] = MappingProxyType(
            {t.name: frozenset(t.members) for t in tags.values()}
        )
        clash = sorted(set(tags) & data.items)
        if clash:
            raise RuntimeError(f"tag names that are also item ids: {clash}")
        self.items = data.items
        self.names = frozenset(data.items | set(tags))

        by_output: dict[str, list[Recipe]] = defaultdict(list)
        uses: dict[str, list[Recipe]] = defaultdict(list)
        for r in self.recipes:
            by_output[r.output].append(r)
            for name, _ in r.inputs:
                uses[name].append(r)
        self.by_output: Mapping[str, tuple[Recipe, ...]] = MappingProxyType(
            {k: tuple(v) for k, v in by_output.items()}
        )
        self.uses: Mapping[str, tuple[Recipe, ...]] = MappingProxyType(
            {k: tuple(sorted(v, key=lambda r: r.line)) for k, v in uses.items()}
        )
        self.depths: Mapping[str, int] = MappingProxyType(self._compute_depths())
        self.goals: tuple[str, ...] = tuple(
            sorted(n for n in self.by_output if self.depths[n] >= MIN_GOAL_DEPTH)
        )

    # -- names ---------------------------------------------------------------------------------
    def resolve(self, text: str) -> str | None:
        """The id a user text names (case/space/underscore-insensitive), or ``None``."""
        name = canonical(text)
        return name if name in self.names else None

    def is_category(self, name: str) -> bool:
        return name in self.categories

    def is_craftable(self, name: str) -> bool:
        return name in self.by_output

    def is_fetchable(self, name: str) -> bool:
        """``get`` works for known items and material tags the book has no recipe for."""
        return name in self.names and name not in self.categories and name not in self.by_output

    def satisfies(self, held: str, ingredient: str) -> bool:
        """Whether a held name can be used for a recipe ingredient (itself or a tag member)."""
        return held == ingredient or held in self.members.get(ingredient, ())

    # -- depth ---------------------------------------------------------------------------------
    def _compute_depths(self) -> dict[str, int]:
        memo: dict[str, int] = {}

        def depth(name: str, trail: tuple[str, ...]) -> int:
            known = memo.get(name)
            if known is not None:
                return known
            if name in trail:  # pragma: no cover - break_cycles guarantees a DAG
                raise RuntimeError(f"recipe cycle through {name}")
            if name in self.categories:
                value = min(depth(m, (*trail, name)) for m in self.members[name])
            elif name in self.by_output:
                value = min(
                    max(depth(i, (*trail, name)) for i, _ in r.inputs) + 1
                    for r in self.by_output[name]
                )
            else:
                value = 0
            memo[name] = value
            return value

        for name in sorted(self.by_output):
            depth(name, ())
        for name in sorted(self.tags):
            depth(name, ())
        return memo

    def depth(self, name: str) -> int:
        """Recipe depth of an id (0 for anything without a recipe)."""
        return self.depths.get(name, 0)

    # -- crafting ------------------------------------------------------------------------------
    def matches(self, recipe: Recipe, given: Sequence[tuple[str, int]]) -> bool:
        """Whether ``given`` (name, count) pairs are exactly the recipe's ingredients.

        Each given entry must name the ingredient itself or a member of the ingredient's tag,
        with exactly the recipe's count; one entry per ingredient.
        """
        needs = recipe.inputs
        if len(given) != len(needs):
            return False
        if all(recipe.needs.get(name) == n for name, n in given):
            return len({name for name, _ in given}) == len(needs)
        used = [False] * len(needs)

        def assign(i: int) -> bool:
            if i == len(given):
                return True
            name, n = given[i]
            for j, (ingredient, count) in enumerate(needs):
                if not used[j] and count == n and self.satisfies(name, ingredient):
                    used[j] = True
                    if assign(i + 1):
                        return True
                    used[j] = False
            return False

        return assign(0)

    def find_recipe(
        self,
        output: str,
        given: Sequence[tuple[str, int]],
        extra: Iterable[Recipe] = (),
    ) -> Recipe | None:
        """The book's (or ``extra``) recipe for ``output`` that ``given`` fulfils exactly."""
        for recipe in self.by_output.get(output, ()):
            if self.matches(recipe, given):
                return recipe
        for recipe in extra:
            if recipe.output == output and self.matches(recipe, given):
                return recipe
        return None

    def recipe_tree(self, item: str) -> list[Recipe]:
        """Every recipe in ``item``'s recipe tree: its recipes, recursively those of their
        inputs; a category expands to its members' recipes. Sorted by command text."""
        seen: set[str] = set()
        found: dict[str, Recipe] = {}
        todo = [item]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in self.categories:
                todo.extend(self.members[name])
            for r in self.by_output.get(name, ()):
                found[r.line] = r
                todo.extend(i for i, _ in r.inputs)
        return [found[line] for line in sorted(found)]

    def commands(self) -> list[str]:
        """Every crafting command line the book knows, sorted."""
        return sorted(r.line for r in self.recipes)

    def show(self, name: str) -> str:
        return display(name)


@cache
def load_book() -> RecipeBook:
    """The process-wide recipe book (built on first use, then shared read-only)."""
    tags = load_tags()
    book = RecipeBook(build_recipe_data(tags), tags)
    logger.debug(
        "textcraft recipe book: %d recipes, %d goals (depth >= %d)",
        len(book.recipes),
        len(book.goals),
        MIN_GOAL_DEPTH,
    )
    return book
