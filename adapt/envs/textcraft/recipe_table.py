"""The packaged recipe table (``recipes-1.16.5.tsv``): TextCraft's crafting recipes, as read
from the game's recipe files.

The table is derived from the 860 recipe files of Minecraft: Java Edition 1.16.5
(``data/minecraft/recipes/``) and ships with adapt, so nothing is read or downloaded at run
time. It keeps what TextCraft's reference (``crafting_tree.py`` in archiki/ADaPT, the same in
AgentGym's TextCraft) takes from each file, and in the same order:

- only the two crafting-table types, ``minecraft:crafting_shaped`` and
  ``minecraft:crafting_shapeless``;
- shaped: one ingredient per entry of the ``key`` object, in the file's key order, counted by
  its occurrences in ``pattern``;
- shapeless: one ingredient per distinct entry of ``ingredients``, in order of first
  appearance, counted by repetition;
- an entry that lists alternatives (``[{"item": "coal"}, {"item": "charcoal"}]``) takes the first;
- the output and its count come from ``result`` (count 1 when absent).

One row per file, sorted by file name: ``file``, ``type``, ``count``, ``output``, then the
ingredients as shown in a crafting command (``2 stick, 3 #planks``; ``#`` marks an item tag).
Ids drop the ``minecraft:`` prefix. Decompression recipes and recipe cycles are left in; the
recipe book drops them (``recipes.py``).

Regenerate (and check) with::

    python -m adapt.envs.textcraft.recipe_table DIR            # write the packaged table
    python -m adapt.envs.textcraft.recipe_table DIR --check    # fail if it differs

where ``DIR`` is the folder of recipe files (``../shared/data/textcraft-recipes-1.16/recipes``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

TABLE_NAME = "recipes-1.16.5.tsv"
SHAPED = "minecraft:crafting_shaped"
SHAPELESS = "minecraft:crafting_shapeless"
_PREFIX = "minecraft:"

Kind = Literal["shaped", "shapeless"]

_HEADER = """\
# TextCraft crafting recipes: Minecraft: Java Edition 1.16.5, data/minecraft/recipes/
# Derived by adapt.envs.textcraft.recipe_table from the game's recipe files, unmodified, as
# copied byte for byte from the PyPI package platoon-textcraft 0.3.0 (folder
# platoon_textcraft/data/recipes/; MIT), which took them from InventivetalentDev/minecraft-assets
# at commit 1b7a1d48b0343c0b8da80604598707df428dc32a. Recipe content: Mojang's game data.
# Regenerate: python -m adapt.envs.textcraft.recipe_table DIR   (DIR: the folder of recipe files)
# Ingredients: shaped in the order of the file's key object, shapeless in order of first
# appearance; a list of alternatives takes its first entry; '#' marks an item tag.
"""


class TableError(ValueError):
    """A recipe file or table line that cannot be read."""


@dataclass(frozen=True, slots=True)
class TableRecipe:
    """One crafting recipe file, reduced to what TextCraft shows."""

    #: the file's name without ``.json`` (``oak_planks``)
    file: str
    kind: Kind
    output: str
    count: int
    #: ``(name, count)`` in display order; a tag's name starts with ``#``
    inputs: tuple[tuple[str, int], ...]

    def row(self) -> str:
        ingredients = ", ".join(f"{n} {name}" for name, n in self.inputs)
        return f"{self.file}\t{self.kind}\t{self.count}\t{self.output}\t{ingredients}"


# -- reading the recipe files ----------------------------------------------------------------
def _strip(name: str) -> str:
    return name[len(_PREFIX) :] if name.startswith(_PREFIX) else name


def _ingredient(entry: Any, where: str) -> str:
    """``oak_planks`` for an item, ``#planks`` for a tag; a list takes its first entry."""
    if isinstance(entry, list):
        if not entry:
            raise TableError(f"{where}: empty list of alternatives")
        entry = entry[0]
    if isinstance(entry, dict):
        if "item" in entry:
            return _strip(str(entry["item"]))
        if "tag" in entry:
            return "#" + _strip(str(entry["tag"]))
    raise TableError(f"{where}: an ingredient is neither an item nor a tag: {entry!r}")


def recipe_from_json(file: str, data: dict[str, Any]) -> TableRecipe | None:
    """The table row of one recipe file, or ``None`` for a type TextCraft does not read."""
    kind = data.get("type")
    inputs: list[tuple[str, int]] = []
    if kind == SHAPED:
        pattern = "".join(data["pattern"])
        for symbol, entry in data["key"].items():
            inputs.append((_ingredient(entry, file), pattern.count(symbol)))
    elif kind == SHAPELESS:
        position: dict[str, int] = {}
        for entry in data["ingredients"]:
            name = _ingredient(entry, file)
            if name in position:
                old, n = inputs[position[name]]
                inputs[position[name]] = (old, n + 1)
            else:
                position[name] = len(inputs)
                inputs.append((name, 1))
    else:
        return None
    result = data["result"]
    if isinstance(result, str):
        output, count = result, 1
    elif isinstance(result, dict) and "item" in result:
        output, count = str(result["item"]), int(result.get("count") or 1)
    else:
        raise TableError(f"{file}: result is not an item: {result!r}")
    return TableRecipe(
        file, "shaped" if kind == SHAPED else "shapeless", _strip(output), count, tuple(inputs)
    )


def _sorted_names(folder: Path) -> list[str]:
    """File names in byte order (``LC_ALL=C sort``): never the directory's listing order."""
    return sorted((p.name for p in folder.iterdir() if p.is_file()), key=lambda n: n.encode())


def fingerprint(folder: Path) -> str:
    """SHA-256 over the files' names and contents, as ``LC_ALL=C sha256sum $(ls | LC_ALL=C sort)
    | sha256sum`` prints it inside the folder."""
    listing = "".join(
        f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}\n"
        for name in _sorted_names(folder)
    )
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def read_folder(folder: Path) -> list[TableRecipe]:
    """The crafting recipes of a folder of recipe files, sorted by file name."""
    out: list[TableRecipe] = []
    for name in _sorted_names(folder):
        if not name.endswith(".json"):
            continue
        data = json.loads((folder / name).read_text(encoding="utf-8"))
        recipe = recipe_from_json(name.removesuffix(".json"), data)
        if recipe is not None:
            out.append(recipe)
    return out


def render_table(folder: Path) -> str:
    """The table text for a folder of recipe files (header with the fingerprint, then rows)."""
    recipes = read_folder(folder)
    files = sum(1 for _ in _sorted_names(folder))
    shaped = sum(1 for r in recipes if r.kind == "shaped")
    head = (
        _HEADER
        + f"# files: {files}; sha256 of names and contents "
        + f"(LC_ALL=C sha256sum $(ls | LC_ALL=C sort) | sha256sum): {fingerprint(folder)}\n"
        + f"# rows: {len(recipes)} ({shaped} shaped, {len(recipes) - shaped} shapeless)\n"
        + "# file\ttype\tcount\toutput\tingredients\n"
    )
    return head + "".join(r.row() + "\n" for r in recipes)


# -- reading the table -----------------------------------------------------------------------
def parse_table(text: str) -> list[TableRecipe]:
    """The rows of a table text (comment lines start with ``#``)."""
    out: list[TableRecipe] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        try:
            file, kind, count, output, ingredients = line.split("\t")
            inputs = []
            for part in ingredients.split(", "):
                n, name = part.split(" ")
                inputs.append((name, int(n)))
            if kind not in ("shaped", "shapeless"):
                raise ValueError(f"unknown type {kind!r}")
            out.append(TableRecipe(file, kind, output, int(count), tuple(inputs)))  # type: ignore[arg-type]
        except ValueError as exc:
            raise TableError(f"recipe table line {number}: {exc}: {line!r}") from exc
    return out


def packaged_text() -> str:
    return (
        resources.files("adapt.envs.textcraft").joinpath(TABLE_NAME).read_text(encoding="utf-8")
    )


@cache
def load_table() -> tuple[TableRecipe, ...]:
    """The packaged table (read once per process)."""
    return tuple(parse_table(packaged_text()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adapt.envs.textcraft.recipe_table",
        description="Write (or check) the packaged TextCraft recipe table from the recipe files.",
    )
    parser.add_argument("folder", type=Path, help="the folder of Minecraft 1.16.5 recipe files")
    parser.add_argument("--check", action="store_true", help="fail if the table is stale")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"not a folder: {args.folder}")
    text = render_table(args.folder)
    target = Path(__file__).with_name(TABLE_NAME)
    if args.check:
        if target.read_text(encoding="utf-8") != text:
            print(f"{target} differs from the table {args.folder} gives", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
