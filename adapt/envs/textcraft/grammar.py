"""GBNF grammars of a TextCraft game: its valid executor actions and its plan lines.

Action grammar (one line, per game): ``inventory``; ``get N <item>`` for every fetchable item
the game's commands use (a material tag such as ``oak logs`` or a base item, N from 1 to 99);
and every listed crafting command with its exact counts, a category ingredient (``planks``)
expanded to each of its members (``oak planks``), since a craft must name the held member.
With ``thoughts=True`` a ``think: <text>`` line is allowed too (ReAct); act-only executors
leave it out.

Plan grammar: ``# Think:`` lines and ``Step N: <sub-task>`` lines, where a sub-task is
``fetch N <item>`` (any item of the game) or one of the game's crafts as above, then one
``Execution Order:`` line joining steps with AND -- the goal forms TextCraft verifies.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

from adapt.envs.textcraft.book import RecipeBook
from adapt.envs.textcraft.game import Game
from adapt.envs.textcraft.recipes import Recipe, display
from adapt.llm.gbnf import gbnf_literal, validate_gbnf

NUMBER = 'num ::= [1-9] [0-9]?'
#: at most this many concrete lines per craft command (category members multiply)
MAX_VARIANTS = 64


def _members(book: RecipeBook, name: str) -> list[str]:
    if book.is_category(name):
        return sorted(book.members[name])
    return [name]


def craft_lines(book: RecipeBook, recipe: Recipe) -> list[str]:
    """The concrete craft actions of one command (category ingredients expanded)."""
    choices = [[(m, n) for m in _members(book, name)] for name, n in recipe.inputs]
    lines = []
    for combo in itertools.islice(itertools.product(*choices), MAX_VARIANTS):
        inputs = ", ".join(f"{n} {display(m)}" for m, n in combo)
        lines.append(f"craft {recipe.count} {display(recipe.output)} using {inputs}")
    return lines


def fetchable_items(book: RecipeBook, game: Game) -> list[str]:
    """Display names of the fetchable items the game's commands use, sorted."""
    names = {m for r in game.recipes for name, _ in r.inputs for m in (name, *_members(book, name))}
    return sorted(display(n) for n in names if book.is_fetchable(n))


def game_items(book: RecipeBook, game: Game) -> list[str]:
    """Display names of every item the game's commands make or use (categories expanded)."""
    names = {r.output for r in game.recipes}
    for r in game.recipes:
        for name, _ in r.inputs:
            names.update(_members(book, name))
    return sorted(display(n) for n in names)


def _alternatives(name: str, options: list[str]) -> str:
    return f"{name} ::= " + " | ".join(gbnf_literal(o) for o in options)


@lru_cache(maxsize=256)
def _action_grammar(book: RecipeBook, game: Game, thoughts: bool) -> str:
    crafts = sorted({line for r in game.recipes for line in craft_lines(book, r)})
    rules = ['root ::= "inventory" | "get " num " " item | craft'
             + (' | "think: " [^\\n]+' if thoughts else ""),
             NUMBER, _alternatives("item", fetchable_items(book, game)),
             _alternatives("craft", crafts)]
    return validate_gbnf("\n".join(rules) + "\n")


def action_grammar(book: RecipeBook, game: Game, *, thoughts: bool = False) -> str:
    """The GBNF grammar of the game's valid executor actions (validated, cached per game)."""
    return _action_grammar(book, game, thoughts)


@lru_cache(maxsize=256)
def _plan_grammar(book: RecipeBook, game: Game) -> str:
    crafts = sorted({line for r in game.recipes for line in craft_lines(book, r)})
    rules = [
        'root ::= line+ "Execution Order: (" ref (" AND " ref)* ")"',
        'line ::= ("# Think: " [^\\n]+ "\\n")? "Step " num ": " subtask "\\n"',
        'subtask ::= "fetch " num " " item | craft',
        'ref ::= "Step " num',
        NUMBER,
        _alternatives("item", game_items(book, game)),
        _alternatives("craft", crafts),
    ]
    return validate_gbnf("\n".join(rules) + "\n")


def plan_grammar(book: RecipeBook, game: Game) -> str:
    """The GBNF grammar of a plan for the game (validated, cached per game)."""
    return _plan_grammar(book, game)
