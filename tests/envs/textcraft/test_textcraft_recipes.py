"""Recipe data: minecraft-data paths, tag folding, counts, dropped recipes, cycles, depth."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from adapt.envs.textcraft.book import load_book
from adapt.envs.textcraft.recipes import (
    MC_VERSION,
    Recipe,
    break_cycles,
    canonical,
    data_file,
    data_root,
    display,
    fold_variants,
    load_items,
    load_variants,
)
from adapt.envs.textcraft.tags import load_tags, parse_tags

BOOK = load_book()
TAGS = load_tags()
VARIANTS = load_variants()


def test_data_files_come_from_data_paths_table() -> None:
    table = json.loads((data_root() / "dataPaths.json").read_text(encoding="utf-8"))
    for kind in ("recipes", "items"):
        folder = table["pc"][MC_VERSION][kind]
        assert data_file(kind) == data_root() / folder / f"{kind}.json"
        assert data_file(kind).is_file()
    assert table["pc"]["1.16.5"]["recipes"] == "pc/1.16.2"  # what the issue describes


def test_book_is_cached_per_process() -> None:
    assert load_book() is BOOK
    assert load_tags() is TAGS


# -- tags ----------------------------------------------------------------------------------------
def test_tag_table_lists_the_tags_games_show() -> None:
    expected_materials = {
        "oak_logs",
        "birch_logs",
        "spruce_logs",
        "jungle_logs",
        "acacia_logs",
        "dark_oak_logs",
        "crimson_stems",
        "warped_stems",
        "logs",
        "wooden_slabs",
        "coals",
        "stone_crafting_materials",
        "stone_tool_materials",
        "soul_fire_base_blocks",
    }
    assert {t.name for t in TAGS.values() if t.kind == "material"} == expected_materials
    assert {t.name for t in TAGS.values() if t.kind == "category"} == {"planks", "wool"}


def test_tag_members_are_items_and_tag_names_are_not() -> None:
    items = set(load_items().values())
    for tag in TAGS.values():
        assert tag.name not in items
        assert set(tag.members) <= items, tag.name
        assert len(tag.members) == len(set(tag.members))
    assert len(TAGS["logs"].members) == 32  # 6 overworld woods x 4 + 2 nether stems x 4


@pytest.mark.parametrize("tag_name", sorted(TAGS))
def test_each_tag_matches_the_recipe_variants_in_the_data(tag_name: str) -> None:
    tag = TAGS[tag_name]
    members = set(tag.members)
    by_output: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for v in VARIANTS:
        by_output[v.output].append(v.cells)
    for result in tag.used_by:
        with_members = [cells for cells in by_output[result] if members & set(cells)]
        seen = {c for cells in with_members for c in cells if c in members}
        # the data expands the tag: one variant per member (times other tags' members)
        assert seen == members, (result, sorted(members - seen))
        assert len(with_members) % len(members) == 0, result
        # and each variant uses exactly one member, in every slot of the tag
        for cells in with_members:
            assert len({c for c in cells if c in members}) == 1, (result, cells)
        # the book folds the variants back into one tag ingredient
        assert any(tag_name in r.needs for r in BOOK.by_output[result]), result


def test_no_other_recipe_uses_a_whole_tag_unlisted() -> None:
    """Any result whose variants span all members of a tag slot is listed in used_by, except
    vanilla's inline item lists (torch and fire charge take coal or charcoal, not #coals)."""
    inline_lists = {"torch", "soul_torch", "fire_charge"}
    by_output: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for v in VARIANTS:
        by_output[v.output].add(v.cells)
    for tag in TAGS.values():
        members = set(tag.members)
        for result, variants in by_output.items():
            seen = {c for cells in variants for c in cells if c in members}
            if seen == members and result not in tag.used_by and result not in inline_lists:
                # a result spanning a tag it does not use must do so through another tag
                assert any(
                    t.name != tag.name and result in t.used_by and members <= set(t.members)
                    for t in TAGS.values()
                ), (tag.name, result)


def test_categories_satisfied_by_members() -> None:
    assert BOOK.satisfies("oak_planks", "planks")
    assert BOOK.satisfies("red_wool", "wool")
    assert BOOK.satisfies("oak_log", "oak_logs")
    assert BOOK.satisfies("oak_logs", "oak_logs")
    assert not BOOK.satisfies("oak_planks", "wool")
    assert not BOOK.satisfies("planks", "oak_planks")


def test_parse_tags_rejects_bad_tables() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        parse_tags('{"tags": {"x": {"kind": "odd", "members": [], "used_by": []}}}')
    with pytest.raises(ValueError, match="unknown tag"):
        parse_tags('{"tags": {"x": {"kind": "material", "members": ["#y"], "used_by": []}}}')


# -- recipes -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "craft 4 stick using 2 planks",
        "craft 1 stick using 2 bamboo",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 crimson planks using 1 crimson stems",
        "craft 1 beehive using 6 planks, 3 honeycomb",
        "craft 3 dark oak sign using 6 dark oak planks, 1 stick",
        "craft 1 lantern using 8 iron nugget, 1 torch",
        "craft 9 iron nugget using 1 iron ingot",
        "craft 4 honey bottle using 1 honey block, 4 glass bottle",
        "craft 1 campfire using 3 stick, 1 coals, 3 logs",
        "craft 1 soul campfire using 3 stick, 1 soul fire base blocks, 3 logs",
        "craft 1 barrel using 6 planks, 2 wooden slabs",
        "craft 1 furnace using 8 stone crafting materials",
        "craft 1 stone pickaxe using 3 stone tool materials, 2 stick",
        "craft 1 painting using 8 stick, 1 wool",
        "craft 4 torch using 1 coal, 1 stick",
        "craft 4 torch using 1 charcoal, 1 stick",
        "craft 4 polished granite stairs using 6 polished granite",
        "craft 1 crossbow using 3 stick, 1 iron ingot, 2 string, 1 tripwire hook",
    ],
)
def test_known_commands_with_counts(line: str) -> None:
    assert line in BOOK.commands()


def test_recipe_commands_are_every_recipe_sorted() -> None:
    commands = BOOK.commands()
    assert commands == sorted(commands)
    assert len(commands) == len(set(commands)) == len(BOOK.recipes)
    assert all(line.startswith("craft ") and " using " in line for line in commands)


def test_decompression_recipes_are_dropped() -> None:
    dropped = {r.line for r in BOOK.data.dropped_decompression}
    assert "craft 9 iron ingot using 1 iron block" in dropped
    assert "craft 9 coal using 1 coal block" in dropped
    for r in BOOK.recipes:
        assert not (len(r.inputs) == 1 and r.inputs[0][0].endswith("_block")), r.line


def test_cycles_are_broken_keeping_raw_materials_fetchable() -> None:
    assert {r.line for r in BOOK.data.dropped_cycles} == {
        "craft 1 iron ingot using 9 iron nugget",
        "craft 1 gold ingot using 9 gold nugget",
        "craft 1 honey block using 4 honey bottle",
        "craft 1 purpur pillar using 2 purpur slab",
        "craft 6 sandstone slab using 3 chiseled sandstone",
        "craft 6 red sandstone slab using 3 chiseled red sandstone",
    }
    for item in ("iron_ingot", "gold_ingot", "honey_block", "purpur_pillar", "coal", "diamond"):
        assert BOOK.is_fetchable(item), item
    # nothing that had another recipe lost craftability
    for item in ("sandstone_slab", "red_sandstone_slab", "chiseled_sandstone", "honey_bottle"):
        assert BOOK.is_craftable(item), item


def test_cycle_breaking_and_folding_do_not_depend_on_order() -> None:
    folded = fold_variants(VARIANTS, TAGS)
    shuffled = list(VARIANTS)
    random.Random(7).shuffle(shuffled)
    assert [r.line for r in fold_variants(shuffled, TAGS)] == [r.line for r in folded]
    kept, dropped = break_cycles(folded)
    mixed = list(folded)
    random.Random(11).shuffle(mixed)
    kept2, dropped2 = break_cycles(mixed)
    assert kept2 == kept and [r.line for r in dropped2] == [r.line for r in dropped]


def test_break_cycles_small_graph() -> None:
    a_from_b = Recipe("a", 1, [("b", 9)])
    b_from_a = Recipe("b", 9, [("a", 1)])
    kept, dropped = break_cycles([b_from_a, a_from_b])
    assert kept == [b_from_a] and dropped == [a_from_b]


def test_graph_is_acyclic_after_normalising() -> None:
    seen: dict[str, int] = {}

    def visit(name: str, trail: frozenset[str]) -> None:
        assert name not in trail, f"cycle through {name}"
        if seen.get(name):
            return
        for r in BOOK.by_output.get(name, ()):
            for i, _ in r.inputs:
                visit(i, trail | {name})
        seen[name] = 1

    for name in BOOK.by_output:
        visit(name, frozenset())


# -- depth ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("item", "depth"),
    [
        ("oak_logs", 0),
        ("iron_ingot", 0),
        ("honey_block", 0),
        ("diamond", 0),
        ("oak_planks", 1),
        ("stick", 1),  # 2 bamboo -> 1 stick
        ("planks", 1),
        ("iron_nugget", 1),
        ("beehive", 2),
        ("honey_bottle", 2),
        ("torch", 2),
        ("diorite", 1),
        ("granite", 2),
        ("polished_granite", 3),
        ("lantern", 3),
        ("crossbow", 3),
        ("polished_granite_stairs", 4),
    ],
)
def test_known_depths(item: str, depth: int) -> None:
    assert BOOK.depth(item) == depth


def test_depth_definition_holds_everywhere() -> None:
    for name, recipes in BOOK.by_output.items():
        want = min(max(BOOK.depth(i) for i, _ in r.inputs) + 1 for r in recipes)
        assert BOOK.depth(name) == want, name
    for tag in TAGS.values():
        if tag.kind == "category":
            assert BOOK.depth(tag.name) == min(BOOK.depth(m) for m in tag.members)
        else:
            assert BOOK.depth(tag.name) == 0


def test_goal_candidates_have_depth_at_least_two() -> None:
    assert BOOK.goals == tuple(sorted(BOOK.goals))
    assert all(BOOK.depth(g) >= 2 and g in BOOK.items for g in BOOK.goals)


def test_names_are_normalised() -> None:
    assert canonical("  Oak   Planks ") == "oak_planks"
    assert canonical("minecraft:oak_planks") == "oak_planks"
    assert display("dark_oak_planks") == "dark oak planks"
    assert BOOK.resolve("DARK  oak_Planks") == "dark_oak_planks"
    assert BOOK.resolve("unobtainium") is None
