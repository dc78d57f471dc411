"""Minecraft 1.16.5 crafting-table recipes, as TextCraft shows them, normalised.

Pipeline (every step deterministic: no ``hash()``, no reliance on a directory's listing order):

1. read the packaged recipe table (``recipe_table.py``: one row per recipe file of the game, the
   ingredients in the reference's order) and the item list of the ``minecraft-data`` package
   (``items.json`` through ``dataPaths.json``, ``pc`` / ``1.16.5``), which names what ``get`` may
   fetch;
2. check the tag ingredients against ``tags.json``; identical recipes are merged;
3. drop decompression recipes: a single distinct input whose id ends with ``_block``
   (``9 iron ingot <- 1 iron block``), as the paper's implementation does;
4. break recipe cycles (see :func:`break_cycles`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from adapt.envs.textcraft.recipe_table import TableRecipe, load_table
from adapt.envs.textcraft.tags import Tag

logger = logging.getLogger(__name__)

MC_VERSION = "1.16.5"
EDITION = "pc"

_SPACES = re.compile(r"[\s_]+")


def display(name: str) -> str:
    """How an item or tag id is shown: ``oak_planks`` -> ``oak planks``."""
    return name.replace("_", " ")


def canonical(text: str) -> str:
    """Normalise user text to an id: case, extra spaces, underscores, ``minecraft:`` prefix."""
    text = text.strip().lower()
    if text.startswith("minecraft:"):
        text = text[10:]
    return _SPACES.sub("_", text).strip("_")


class Recipe:
    """One crafting command: ``craft <count> <output> using <n> <input>, ...``.

    ``inputs`` keeps the display order; equality and hashing ignore it.
    """

    __slots__ = ("count", "inputs", "key", "line", "needs", "output")

    def __init__(self, output: str, count: int, inputs: Sequence[tuple[str, int]]) -> None:
        self.output = output
        self.count = count
        self.inputs: tuple[tuple[str, int], ...] = tuple(inputs)
        self.needs: dict[str, int] = dict(self.inputs)
        self.key: tuple[str, int, tuple[tuple[str, int], ...]] = (
            output,
            count,
            tuple(sorted(self.inputs)),
        )
        ingredients = ", ".join(f"{n} {display(name)}" for name, n in self.inputs)
        self.line = f"craft {count} {display(output)} using {ingredients}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Recipe) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Recipe({self.line!r})"

    @property
    def units_in(self) -> int:
        return sum(n for _, n in self.inputs)


@dataclass(frozen=True, slots=True)
class RecipeData:
    recipes: tuple[Recipe, ...]
    #: every item id minecraft-data knows for the version
    items: frozenset[str]
    dropped_decompression: tuple[Recipe, ...]
    dropped_cycles: tuple[Recipe, ...]


# -- reading minecraft-data --------------------------------------------------------------------
def data_root() -> Path:
    """``site-packages/minecraft_data/data/data`` (without importing the package)."""
    spec = find_spec("minecraft_data")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the minecraft-data package is not installed (pip install minecraft-data)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "data"


def data_file(kind: str, version: str = MC_VERSION) -> Path:
    """The file minecraft-data uses for ``kind`` (``recipes``, ``items``) of ``version``."""
    root = data_root()
    paths = json.loads((root / "dataPaths.json").read_text(encoding="utf-8"))
    folder: str = paths[EDITION][version][kind]
    return root / folder / f"{kind}.json"


def load_items() -> dict[int, str]:
    raw: list[dict[str, Any]] = json.loads(data_file("items").read_text(encoding="utf-8"))
    return {int(entry["id"]): str(entry["name"]) for entry in raw}


# -- the recipe table --------------------------------------------------------------------------
def recipes_from_table(rows: Sequence[TableRecipe], tags: Mapping[str, Tag]) -> list[Recipe]:
    """The table's rows as recipes, in the table's ingredient order, checked against the tag
    table: every ``#tag`` ingredient is a tag of ``tags.json`` whose ``used_by`` lists exactly
    the results that use it, and no plain ingredient is a tag's name. Rows that are the same
    recipe (``sugar`` from sugar cane, twice) are kept once: the first by file name.

    Raises ``RuntimeError`` when the data and the tag table disagree.
    """
    users: dict[str, set[str]] = defaultdict(set)
    seen: dict[tuple[str, int, tuple[tuple[str, int], ...]], Recipe] = {}
    for row in rows:
        inputs: list[tuple[str, int]] = []
        for name, n in row.inputs:
            if name.startswith("#"):
                name = name[1:]
                if name not in tags:
                    raise RuntimeError(f"{row.file}: tag {name!r} is not in tags.json")
                users[name].add(row.output)
            elif name in tags:
                raise RuntimeError(f"{row.file}: item {name!r} has the name of a tag")
            inputs.append((name, n))
        recipe = Recipe(row.output, row.count, inputs)
        seen.setdefault(recipe.key, recipe)
    for tag in tags.values():
        if users.get(tag.name, set()) != set(tag.used_by):
            raise RuntimeError(
                f"tags.json: {tag.name} used_by {sorted(tag.used_by)}, "
                f"the recipe table: {sorted(users.get(tag.name, ()))}"
            )
    return sorted(seen.values(), key=lambda r: (r.output, r.line))

def is_decompression(recipe: Recipe) -> bool:
    """A single distinct input whose id ends with ``_block`` (``9 coal <- 1 coal block``)."""
    return len(recipe.inputs) == 1 and recipe.inputs[0][0].endswith("_block")


def _components(recipes: Sequence[Recipe]) -> dict[str, int]:
    """Strongly connected components of the item graph (output -> input), iterative Tarjan."""
    graph: dict[str, list[str]] = defaultdict(list)
    for r in recipes:
        graph[r.output].extend(name for name, _ in r.inputs)
    nodes = sorted(set(graph) | {n for edges in graph.values() for n in edges})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            edges = graph.get(node, [])
            if i < len(edges):
                work.append((node, i + 1))
                nxt = edges[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp[member] = index[node]
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return comp


def break_cycles(recipes: Sequence[Recipe]) -> tuple[list[Recipe], list[Recipe]]:
    """Drop recipes until the item graph is acyclic; returns ``(kept, dropped)``.

    While some recipe has an input in the same strongly connected component as its output, drop
    the one cyclic recipe that sorts first by:

    1. its output keeps another recipe (nothing becomes uncraftable if one exists);
    2. the most compressing recipe first (input units per output unit, highest first), so the
       raw form stays a base material;
    3. output id, then command text.

    The 1.16.5 recipes have three cycles, each a pair, and the rule keeps the recipe the
    published TextCraft games show: ``9 gold nugget <- 1 gold ingot`` (``gold ingot <- 9 gold
    nugget`` goes), ``9 iron nugget <- 1 iron ingot`` and ``4 honey bottle <- 1 honey block,
    4 glass bottle`` (``honey block <- 4 honey bottle`` goes); gold ingot, iron ingot and honey
    block become fetchable. The reference keeps whichever recipe of a pair its directory
    listing returns first; this rule depends only on the set of recipes, never on an order.
    """
    kept = sorted(recipes, key=lambda r: (r.output, r.line))
    dropped: list[Recipe] = []
    # dropping an edge only splits components: after the first pass, only recipes that were on
    # a cycle can still be on one
    candidates = kept
    while True:
        comp = _components(candidates)
        cyclic = [
            r for r in candidates if any(comp[name] == comp[r.output] for name, _ in r.inputs)
        ]
        if not cyclic:
            return kept, dropped
        per_output = Counter(r.output for r in kept)

        def rank(
            r: Recipe, per_output: Counter[str] = per_output
        ) -> tuple[int, Fraction, str, str]:
            stranded = 0 if per_output[r.output] > 1 else 1
            return (stranded, -Fraction(r.units_in, r.count), r.output, r.line)

        victim = min(cyclic, key=rank)
        logger.debug("breaking recipe cycle: dropping %s", victim.line)
        kept.remove(victim)
        dropped.append(victim)
        candidates = [r for r in cyclic if r is not victim]


def build_recipe_data(tags: Mapping[str, Tag]) -> RecipeData:
    items = load_items()
    recipes = recipes_from_table(load_table(), tags)
    kept = [r for r in recipes if not is_decompression(r)]
    decompression = tuple(r for r in recipes if is_decompression(r))
    acyclic, cycles = break_cycles(kept)
    return RecipeData(tuple(acyclic), frozenset(items.values()), decompression, tuple(cycles))
