"""Minecraft 1.16.5 crafting-table recipes from the ``minecraft-data`` package, normalised.

Pipeline (every step deterministic: inputs are sorted, no ``hash()``, no dict-order reliance):

1. read ``recipes.json`` and ``items.json`` through ``dataPaths.json`` (``pc`` / ``1.16.5``);
2. fold tag variants back into one recipe with a tag ingredient (``tags.json``);
3. count ingredients (shaped: occurrences in the pattern; shapeless: list entries); the output
   count comes from the result; identical recipes are merged;
4. drop decompression recipes: a single distinct input whose id ends with ``_block``
   (``9 iron ingot <- 1 iron block``), as the paper's implementation does;
5. break recipe cycles (see :func:`break_cycles`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from importlib.util import find_spec
from pathlib import Path
from typing import Any

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
class RawVariant:
    """One recipe entry of minecraft-data, with item ids instead of numbers."""

    output: str
    count: int
    #: ingredient ids, one per occupied grid cell (shaped) or list entry (shapeless)
    cells: tuple[str, ...]
    shaped: bool


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


def load_variants(items: Mapping[int, str] | None = None) -> list[RawVariant]:
    """Every crafting recipe entry, sorted (the file's key order never matters)."""
    names = load_items() if items is None else items
    raw: dict[str, list[dict[str, Any]]] = json.loads(
        data_file("recipes").read_text(encoding="utf-8")
    )
    out: list[RawVariant] = []
    for entries in raw.values():
        for entry in entries:
            result = entry["result"]
            output, count = names[int(result["id"])], int(result.get("count", 1))
            if "inShape" in entry:
                cells = tuple(names[c] for row in entry["inShape"] for c in row if c is not None)
                out.append(RawVariant(output, count, cells, True))
            else:
                cells = tuple(names[c] for c in entry["ingredients"])
                out.append(RawVariant(output, count, cells, False))
    out.sort(key=lambda v: (v.output, v.count, v.cells, v.shaped))
    return out


# -- normalising -------------------------------------------------------------------------------
def _ordered_counts(cells: Iterable[str]) -> list[tuple[str, int]]:
    counts = Counter(cells)
    return [(name, counts[name]) for name in dict.fromkeys(cells)]


def fold_variants(variants: Sequence[RawVariant], tags: Mapping[str, Tag]) -> list[Recipe]:
    """Fold tag expansions back into tag ingredients and merge identical recipes.

    Raises ``RuntimeError`` when the data and the tag table disagree (a ``used_by`` recipe whose
    variants do not cover exactly the tag's members).
    """
    by_output: dict[str, list[RawVariant]] = defaultdict(list)
    for v in variants:
        by_output[v.output].append(v)
    users: dict[str, list[Tag]] = defaultdict(list)
    for tag in tags.values():
        for result in tag.used_by:
            users[result].append(tag)

    merged: dict[tuple[str, int, tuple[tuple[str, int], ...]], Recipe] = {}
    for output in sorted(by_output):
        member_tag: dict[str, str] = {}
        for tag in users.get(output, ()):
            for member in tag.members:
                if member in member_tag:
                    raise RuntimeError(f"{output}: {member} is in two tags it uses")
                member_tag[member] = tag.name
        groups: dict[tuple[tuple[str, ...], int], set[tuple[str, ...]]] = defaultdict(set)
        for v in by_output[output]:
            canon = tuple(member_tag.get(c, c) for c in v.cells)
            groups[(canon, v.count)].add(v.cells)
        folded = set()
        for (canon, count), members in sorted(groups.items()):
            expected = 1
            for name in set(canon) & set(member_tag.values()):
                expected *= len(tags[name].members)
                folded.add(name)
            if len(members) != expected:
                raise RuntimeError(
                    f"{output}: {len(members)} variants of {canon} in minecraft-data, "
                    f"the tag table implies {expected}"
                )
            recipe = Recipe(output, count, _ordered_counts(canon))
            old = merged.get(recipe.key)
            if old is None or recipe.inputs < old.inputs:
                merged[recipe.key] = recipe
        missing = {t.name for t in users.get(output, ())} - folded
        if missing:
            raise RuntimeError(f"{output}: tags {sorted(missing)} listed in used_by but unused")
    unknown = sorted(set(users) - set(by_output))
    if unknown:
        raise RuntimeError(f"tags.json used_by names items without recipes: {unknown}")
    return sorted(merged.values(), key=lambda r: (r.output, r.line))


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
       raw form stays a base material: ``iron ingot <- 9 iron nugget`` goes, ``9 iron nugget <-
       iron ingot`` stays and iron ingot becomes fetchable; likewise gold and honey block;
    3. output id, then command text.

    Order-independent: the result depends only on the set of recipes.
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
    folded = fold_variants(load_variants(items), tags)
    kept = [r for r in folded if not is_decompression(r)]
    decompression = tuple(r for r in folded if is_decompression(r))
    acyclic, cycles = break_cycles(kept)
    return RecipeData(tuple(acyclic), frozenset(items.values()), decompression, tuple(cycles))
