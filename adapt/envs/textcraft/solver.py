"""A scripted TextCraft solver: a correct action list for the current game.

Uses only the game's crafting commands for crafting, ``get`` for fetchable names (as the
recipe book decides) and count arithmetic: to have ``n`` of an item it fetches or crafts the
missing amount, crafting ``ceil(missing / recipe count)`` times. Among several commands for an
item it picks the shallowest (depth computed over the game's commands), ties by command text;
for a category ingredient it uses a member already held in sufficient amount, else the
shallowest member, ties by id. The simulation starts from the env's current inventory.
"""

from __future__ import annotations

import math
from collections import defaultdict

from adapt.envs.textcraft.book import RecipeBook
from adapt.envs.textcraft.env import TextCraft
from adapt.envs.textcraft.recipes import Recipe, display

_UNREACHABLE = 10**6


class Unsolvable(RuntimeError):
    """The game's commands cannot produce the goal."""


class _Plan:
    def __init__(self, book: RecipeBook, recipes: tuple[Recipe, ...], inventory: dict[str, int]):
        self.book = book
        self.inventory = inventory
        self.actions: list[str] = []
        by_output: dict[str, list[Recipe]] = defaultdict(list)
        for r in dict.fromkeys(recipes):
            by_output[r.output].append(r)
        self.by_output = {k: sorted(v, key=lambda r: r.line) for k, v in by_output.items()}
        self._depth: dict[str, int] = {}

    def depth(self, name: str, trail: frozenset[str] = frozenset()) -> int:
        known = self._depth.get(name)
        if known is not None:
            return known
        if name in trail:
            return _UNREACHABLE
        inner = trail | {name}
        if self.book.is_fetchable(name):
            value = 0
        elif self.book.is_category(name):
            value = min((self.depth(m, inner) for m in self.book.members[name]), default=0)
        else:
            value = min(
                (
                    max(self.depth(i, inner) for i, _ in r.inputs) + 1
                    for r in self.by_output.get(name, ())
                ),
                default=_UNREACHABLE,
            )
        self._depth[name] = value  # in a cyclic explicit game this may overestimate: harmless
        return value

    def choose_member(self, category: str, n: int) -> str:
        members = sorted(self.book.members[category])
        held = [m for m in members if self.inventory.get(m, 0) >= n]
        if held:
            return held[0]
        return min(members, key=lambda m: (self.depth(m), m))

    def obtain(self, name: str, n: int, stack: tuple[str, ...] = ()) -> None:
        """Make sure the inventory holds at least ``n`` of ``name``."""
        have = self.inventory.get(name, 0)
        if have >= n:
            return
        missing = n - have
        if self.book.is_fetchable(name):
            self.actions.append(f"get {missing} {display(name)}")
            self.inventory[name] = n
            return
        if name in stack:
            raise Unsolvable(f"cycle through {display(name)}")
        options = self.by_output.get(name, [])
        if not options:
            raise Unsolvable(f"no command crafts {display(name)} and it cannot be fetched")
        recipe = min(options, key=lambda r: (max(self.depth(i) for i, _ in r.inputs), r.line))
        times = math.ceil(missing / recipe.count)
        chosen = [
            (self.choose_member(i, c * times) if self.book.is_category(i) else i, c)
            for i, c in recipe.inputs
        ]
        # gathering one ingredient may consume another (sticks eat planks): repeat until all
        # are held at once; terminates because the recipe graph below is acyclic
        for _ in range(len(chosen) + 2):
            for item, c in chosen:
                self.obtain(item, c * times, (*stack, name))
            if all(self.inventory.get(item, 0) >= c * times for item, c in chosen):
                break
        else:  # pragma: no cover - defensive
            raise Unsolvable(f"could not gather the ingredients of {display(name)}")
        using = ", ".join(f"{c} {display(item)}" for item, c in chosen)
        for _ in range(times):
            self.actions.append(f"craft {recipe.count} {display(name)} using {using}")
            for item, c in chosen:
                self.inventory[item] -= c
                if not self.inventory[item]:
                    del self.inventory[item]
            self.inventory[name] = self.inventory.get(name, 0) + recipe.count


def obtain(env: TextCraft, item: str, n: int) -> list[str]:
    """Actions that bring the env's inventory to at least ``n`` of ``item`` (an id or a name as
    shown, e.g. ``dark oak planks``; a category picks a member), using the game's commands.

    Handy for sub-tasks such as ``fetch 6 dark oak planks``. Raises ``Unsolvable``.
    """
    name = env.book.resolve(item)
    if name is None:
        raise Unsolvable(f"unknown item {item!r}")
    plan = _Plan(env.book, env.game.recipes, env.inventory)
    if env.book.is_category(name):
        name = plan.choose_member(name, n)
    plan.obtain(name, n)
    return plan.actions


def solve(env: TextCraft) -> list[str]:
    """Actions that craft the current game's goal from the env's current inventory.

    Raises ``Unsolvable`` when the game's commands cannot produce the goal.
    """
    game = env.game
    plan = _Plan(env.book, game.recipes, env.inventory)
    goal = game.goal
    options = plan.by_output.get(goal, [])
    if not options:
        raise Unsolvable(f"no command crafts the goal {display(goal)}")
    # the goal must be crafted (reward comes when it enters the inventory), even if held
    plan.obtain(goal, plan.inventory.get(goal, 0) + 1)
    return plan.actions
