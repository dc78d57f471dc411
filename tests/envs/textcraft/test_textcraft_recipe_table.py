"""The packaged recipe table: how a recipe file becomes a row (ingredient order, counts,
alternatives), and that the table is what the game's 860 files in ``../shared`` give."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from adapt.envs.textcraft.recipe_table import (
    TABLE_NAME,
    TableError,
    TableRecipe,
    fingerprint,
    load_table,
    main,
    packaged_text,
    parse_table,
    read_folder,
    recipe_from_json,
    render_table,
)

#: the README of ../shared/data/textcraft-recipes-1.16 gives these
FILES = 860
NAMES_AND_CONTENTS = "fae9ea66708f93283919cc7d6d9ee0ca35f6e805447c64ef2898d71534a46394"


def shapeless(*entries: Any, result: Any = None) -> dict[str, Any]:
    return {
        "type": "minecraft:crafting_shapeless",
        "ingredients": list(entries),
        "result": result or {"item": "minecraft:out"},
    }


def item(name: str) -> dict[str, str]:
    return {"item": f"minecraft:{name}"}


# -- one file -> one row ---------------------------------------------------------------------
def test_shapeless_ingredients_in_order_of_first_appearance() -> None:
    row = recipe_from_json(
        "x", shapeless(item("b"), item("a"), item("b"), {"tag": "minecraft:t"}, item("a"), item("b"))
    )
    assert row is not None
    assert row.inputs == (("b", 3), ("a", 2), ("#t", 1))
    # not sorted, not grouped by kind: the first appearance decides
    row = recipe_from_json("x", shapeless(item("z"), item("y"), item("z")))
    assert row is not None and row.inputs == (("z", 2), ("y", 1))


def test_shaped_ingredients_in_key_order_counted_in_the_pattern() -> None:
    data = {
        "type": "minecraft:crafting_shaped",
        # the grid reads a, b, c; the key object lists c, a, b
        "pattern": ["ab", "bc", " c"],
        "key": {"c": item("coal"), "a": item("apple"), "b": {"tag": "minecraft:planks"}},
        "result": {"item": "minecraft:thing", "count": 3},
    }
    row = recipe_from_json("thing", data)
    assert row == TableRecipe("thing", "shaped", "thing", 3, (("coal", 2), ("apple", 1), ("#planks", 2)))
    assert row.row() == "thing\tshaped\t3\tthing\t2 coal, 1 apple, 2 #planks"


def test_a_list_of_alternatives_takes_its_first_entry() -> None:
    row = recipe_from_json("t", shapeless([item("coal"), item("charcoal")], item("stick")))
    assert row is not None and row.inputs == (("coal", 1), ("stick", 1))


def test_result_count_defaults_to_one_and_other_types_are_skipped() -> None:
    row = recipe_from_json("x", shapeless(item("a"), result={"item": "minecraft:b"}))
    assert row is not None and (row.output, row.count) == ("b", 1)
    smelting = {"type": "minecraft:smelting", "ingredient": item("a"), "result": "minecraft:b"}
    assert recipe_from_json("x", smelting) is None


def test_bad_entries_are_reported_with_the_file() -> None:
    with pytest.raises(TableError, match="bad_file"):
        recipe_from_json("bad_file", shapeless({"count": 1}))
    with pytest.raises(TableError, match="empty list"):
        recipe_from_json("bad_file", shapeless([]))
    with pytest.raises(TableError, match="line 2"):
        parse_table("# comment\nx\tshaped\t1\n")


def test_reading_a_folder_does_not_follow_its_listing_order(tmp_path: Path) -> None:
    for name, data in [
        ("b.json", shapeless(item("x"))),
        ("a.json", shapeless(item("y"))),
        ("c.json", {"type": "minecraft:smelting"}),
        ("notes.txt", None),
    ]:
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    assert [r.file for r in read_folder(tmp_path)] == ["a", "b"]
    text = render_table(tmp_path)
    assert "# files: 4;" in text and "# rows: 2 (0 shaped, 2 shapeless)" in text
    assert parse_table(text) == read_folder(tmp_path)


# -- the packaged table ----------------------------------------------------------------------
def test_packaged_table_round_trips() -> None:
    table = load_table()
    assert len(table) == 635
    assert sum(r.kind == "shaped" for r in table) == 491
    text = packaged_text()
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    assert rows == [r.row() for r in table]
    assert NAMES_AND_CONTENTS in text  # the provenance travels with the data


def test_packaged_table_is_what_the_shared_recipe_files_give(recipe_files: Path) -> None:
    assert sum(1 for _ in recipe_files.iterdir()) == FILES
    assert fingerprint(recipe_files) == NAMES_AND_CONTENTS
    assert render_table(recipe_files) == packaged_text()
    assert main([str(recipe_files), "--check"]) == 0


def test_check_fails_on_a_stale_table(
    recipe_files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "recipes"
    shutil.copytree(recipe_files, folder)
    os.remove(folder / "torch.json")
    assert main([str(folder), "--check"]) == 1
    assert TABLE_NAME in capsys.readouterr().err
