"""TextCraft games: a goal item plus the crafting commands shown to the agent.

A generated game (Appendix E of the paper): the goal's whole recipe tree (every recipe of the
goal, recursively of its inputs; a category expands to its members' recipes) plus up to 10
distractors: for every ingredient of the tree, up to 10 recipes that use it are sampled, and up
to 10 of those not already in the tree are kept; everything is shuffled.

Randomness comes only from ``random.Random`` seeded with an int derived by SHA-256 from the
seed or goal, over sorted inputs, so games are identical across processes and independent of
``PYTHONHASHSEED``. Games are immutable; nothing is shared with or mutated in the recipe book.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from adapt.envs.textcraft.book import RecipeBook
from adapt.envs.textcraft.recipes import Recipe, display
from adapt.errors import InvalidConfig

#: the paper's cap on distractor commands (and on uses sampled per ingredient)
MAX_DISTRACTORS = 10
#: goals of earlier recipe data that are goals no more; the seeded draw still counts them (and
#: draws again when it lands on one), so every other seed keeps its goal: chiseled quartz block
#: has depth 1 since the recipes come from the game's files (its quartz slab is a base item)
RETIRED_GOALS = ("chiseled_quartz_block",)

_COMMAND = re.compile(r"^craft\s+(\d+)\s+(.+?)\s+using\s+(.+)$", re.IGNORECASE)
_AMOUNT = re.compile(r"^(\d+)\s+(.+)$")
_EXAMPLE = "craft 4 stick using 2 planks"


@dataclass(frozen=True, slots=True)
class Game:
    """One episode's fixed content."""

    #: goal item id, e.g. ``polished_granite_stairs``
    goal: str
    #: the crafting command lines, in the order shown
    commands: tuple[str, ...]
    #: the commands as recipes (same order)
    recipes: tuple[Recipe, ...]
    #: recipes from explicit commands that the book does not have (craftable in this game too)
    extra: tuple[Recipe, ...] = ()

    @property
    def goal_text(self) -> str:
        return f"craft {display(self.goal)}"

    def observation(self, goal: str | None = None) -> str:
        """``Crafting commands:\\n<lines>\\n\\nGoal: <goal>.`` (the root goal by default)."""
        text = self.goal_text if goal is None else goal.strip().rstrip(".").rstrip()
        return "Crafting commands:\n" + "\n".join(self.commands) + f"\n\nGoal: {text}."


def derived_rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded by SHA-256 of the parts (stable across processes)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def generate(book: RecipeBook, goal: str, rng: random.Random) -> Game:
    """A game for ``goal`` (an item id with a recipe) drawing randomness from ``rng``."""
    gold = book.recipe_tree(goal)
    gold_lines = {r.line for r in gold}
    pool: dict[str, Recipe] = {}
    for recipe in gold:
        for name, _ in recipe.inputs:
            uses = book.uses.get(name, ())
            for use in rng.sample(uses, min(MAX_DISTRACTORS, len(uses))):
                pool[use.line] = use
    candidates = sorted(line for line in pool if line not in gold_lines)
    chosen = rng.sample(candidates, min(MAX_DISTRACTORS, len(candidates)))
    by_line = {r.line: r for r in gold}
    by_line.update((line, pool[line]) for line in chosen)
    lines = [r.line for r in gold] + chosen
    rng.shuffle(lines)
    return Game(goal, tuple(lines), tuple(by_line[line] for line in lines))


def game_for_seed(book: RecipeBook, seed: int) -> Game:
    """The seeded game: the goal is drawn from the items of depth >= 2, then the commands.

    The draw is over the goals plus ``RETIRED_GOALS`` (sorted), again until it is a goal.
    """
    rng = derived_rng("textcraft-seed", seed)
    retired = set(RETIRED_GOALS) - set(book.goals)
    pool = sorted({*book.goals, *retired})
    goal = rng.choice(pool)
    while goal in retired:
        goal = rng.choice(pool)
    return generate(book, goal, rng)


def parse_goal(book: RecipeBook, text: str, extra: Sequence[Recipe] = ()) -> str:
    """The item id a goal string names (``craft polished granite stairs``, with or without
    ``craft`` and a final ``.``). Raises ``InvalidConfig``."""
    body = text.strip().rstrip(".").strip()
    if body.lower().startswith("craft "):
        body = body[6:]
    name = book.resolve(body)
    if name is not None and name in book.tags:
        raise InvalidConfig(
            f"textcraft: goal {text!r} names the tag {body!r}, not an item; name one item, "
            "e.g. goal='craft oak planks'"
        )
    if name is None:
        raise InvalidConfig(
            f"textcraft: unknown goal item {body!r} in goal {text!r}; name a Minecraft 1.16.5 "
            "item as shown in crafting commands, e.g. goal='craft polished granite stairs'"
        )
    if not book.is_craftable(name) and all(r.output != name for r in extra):
        raise InvalidConfig(
            f"textcraft: goal item {display(name)!r} has no crafting recipe; choose a craftable "
            "item (see TextCraft().recipe_commands() or adapt.envs.textcraft.tasks())"
        )
    return name


def game_for_goal(book: RecipeBook, goal: str) -> Game:
    """The generated game for a goal string (deterministic per goal)."""
    name = parse_goal(book, goal)
    return generate(book, name, derived_rng("textcraft-goal", name))


def parse_command(book: RecipeBook, line: str) -> Recipe:
    """A recipe from a command line as shown in games. Raises ``InvalidConfig``."""
    m = _COMMAND.match(" ".join(line.split()))
    hint = f"expected a line like {_EXAMPLE!r}"
    if m is None:
        raise InvalidConfig(f"textcraft: malformed crafting command {line!r}; {hint}")
    count, output_text, inputs_text = int(m.group(1)), m.group(2), m.group(3)
    output = book.resolve(output_text)
    if output is not None and output in book.tags:
        raise InvalidConfig(
            f"textcraft: {output_text!r} in command {line!r} is a tag, not an item; "
            "a crafting command must produce an item"
        )
    if output is None:
        raise InvalidConfig(f"textcraft: unknown item {output_text!r} in command {line!r}")
    inputs: list[tuple[str, int]] = []
    for part in inputs_text.split(","):
        am = _AMOUNT.match(part.strip())
        if am is None:
            raise InvalidConfig(
                f"textcraft: malformed ingredient {part.strip()!r} in command {line!r}; {hint}"
            )
        name = book.resolve(am.group(2))
        if name is None:
            raise InvalidConfig(f"textcraft: unknown item {am.group(2)!r} in command {line!r}")
        if any(name == seen for seen, _ in inputs):
            raise InvalidConfig(f"textcraft: ingredient {am.group(2)!r} repeated in {line!r}")
        inputs.append((name, int(am.group(1))))
    if count < 1 or any(n < 1 for _, n in inputs):
        raise InvalidConfig(f"textcraft: counts must be positive in command {line!r}")
    return Recipe(output, count, inputs)


def explicit_game(book: RecipeBook, goal: str, commands: Sequence[str]) -> Game:
    """A game given verbatim (e.g. a published task): shown lines kept as given."""
    if not commands:
        raise InvalidConfig(
            "textcraft: commands is empty; give the crafting command lines or leave commands "
            "out to generate them for the goal"
        )
    lines = tuple(line.strip() for line in commands)
    recipes = tuple(parse_command(book, line) for line in lines)
    extra = tuple(dict.fromkeys(r for r in recipes if r not in book.recipe_set))
    name = parse_goal(book, goal, extra)
    return Game(name, lines, recipes, extra)
