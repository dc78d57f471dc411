"""Recipe data: the packaged table, tags, counts, ingredient order, dropped recipes, cycles,
depth."""

from __future__ import annotations

import json
import random

import pytest

from adapt.envs.textcraft.book import load_book
from adapt.envs.textcraft.recipe_table import TableRecipe, load_table
from adapt.envs.textcraft.recipes import (
    MC_VERSION,
    Recipe,
    break_cycles,
    canonical,
    data_file,
    data_root,
    display,
    is_decompression,
    load_items,
    recipes_from_table,
)
from adapt.envs.textcraft.tags import load_tags, parse_tags

BOOK = load_book()
TAGS = load_tags()
TABLE = load_table()


def test_item_list_comes_from_data_paths_table() -> None:
    table = json.loads((data_root() / "dataPaths.json").read_text(encoding="utf-8"))
    folder = table["pc"][MC_VERSION]["items"]
    assert data_file("items") == data_root() / folder / "items.json"
    assert data_file("items").is_file()


def test_every_name_of_the_table_is_an_item_or_a_tag() -> None:
    items = set(load_items().values())
    for row in TABLE:
        assert row.output in items, row
        for name, _ in row.inputs:
            assert (name[1:] in TAGS) if name.startswith("#") else (name in items), row


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


def test_each_tag_is_used_by_exactly_the_recipes_of_its_table_entry() -> None:
    for tag in TAGS.values():
        users = {row.output for row in TABLE if any(n == "#" + tag.name for n, _ in row.inputs)}
        assert users == set(tag.used_by), tag.name
        for result in tag.used_by:
            assert any(tag.name in r.needs for r in BOOK.by_output[result]), result


def test_table_and_tag_table_must_agree() -> None:
    row = next(r for r in TABLE if r.output == "painting")
    with pytest.raises(RuntimeError, match="used_by"):
        recipes_from_table([r for r in TABLE if r is not row], TAGS)
    odd = TableRecipe("odd", "shaped", "odd", 1, (("#unknown_tag", 1),))
    with pytest.raises(RuntimeError, match=r"not in tags\.json"):
        recipes_from_table([*TABLE, odd], TAGS)
    bare = TableRecipe("odd", "shaped", "odd", 1, (("planks", 1),))
    with pytest.raises(RuntimeError, match="name of a tag"):
        recipes_from_table([*TABLE, bare], TAGS)


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


# -- recipes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "craft 4 stick using 2 planks",
        "craft 1 stick using 2 bamboo",
        "craft 4 oak planks using 1 oak logs",
        "craft 4 crimson planks using 1 crimson stems",
        "craft 1 beehive using 6 planks, 3 honeycomb",
        "craft 3 dark oak sign using 6 dark oak planks, 1 stick",
        "craft 9 iron nugget using 1 iron ingot",
        "craft 4 honey bottle using 1 honey block, 4 glass bottle",
        "craft 1 barrel using 6 planks, 2 wooden slabs",
        "craft 1 furnace using 8 stone crafting materials",
        "craft 1 painting using 8 stick, 1 wool",
        "craft 4 polished granite stairs using 6 polished granite",
        "craft 1 granite using 1 diorite, 1 quartz",
        # shaped recipes list their ingredients in the order of the file's key object, as the
        # reference does (the published games' lines), not in the grid's reading order
        "craft 1 lantern using 1 torch, 8 iron nugget",
        "craft 4 torch using 1 stick, 1 coal",
        "craft 1 campfire using 3 logs, 3 stick, 1 coals",
        "craft 1 soul campfire using 3 logs, 3 stick, 1 soul fire base blocks",
        "craft 1 stone pickaxe using 2 stick, 3 stone tool materials",
        "craft 1 crossbow using 2 string, 3 stick, 1 iron ingot, 1 tripwire hook",
        "craft 1 dispenser using 1 redstone, 7 cobblestone, 1 bow",
        "craft 1 daylight detector using 3 quartz, 3 glass, 3 wooden slabs",
        "craft 1 cake using 3 milk bucket, 2 sugar, 3 wheat, 1 egg",
        "craft 2 diorite using 2 quartz, 2 cobblestone",
    ],
)
def test_known_commands_with_counts(line: str) -> None:
    assert line in BOOK.commands()


def test_a_list_of_alternatives_gives_its_first_entry_only() -> None:
    """As the reference: ``torch`` takes coal or charcoal in the game, TextCraft shows coal."""
    commands = set(BOOK.commands())
    assert "craft 3 fire charge using 1 gunpowder, 1 blaze powder, 1 coal" in commands
    assert "craft 1 tnt using 4 sand, 5 gunpowder" in commands
    for line in commands:
        assert "charcoal" not in line and "red sand," not in line, line
    assert [r.line for r in BOOK.by_output["torch"]] == ["craft 4 torch using 1 stick, 1 coal"]


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


def test_cycles_are_broken_keeping_what_the_published_games_show() -> None:
    """Three pairs form cycles; the rule keeps the nugget and honey bottle recipes."""
    assert {r.line for r in BOOK.data.dropped_cycles} == {
        "craft 1 iron ingot using 9 iron nugget",
        "craft 1 gold ingot using 9 gold nugget",
        "craft 1 honey block using 4 honey bottle",
    }
    commands = set(BOOK.commands())
    assert {
        "craft 9 gold nugget using 1 gold ingot",
        "craft 9 iron nugget using 1 iron ingot",
        "craft 4 honey bottle using 1 honey block, 4 glass bottle",
    } <= commands
    for item in ("iron_ingot", "gold_ingot", "honey_block", "coal", "diamond"):
        assert BOOK.is_fetchable(item), item
    for item in ("iron_nugget", "gold_nugget", "honey_bottle", "purpur_pillar"):
        assert BOOK.is_craftable(item), item


@pytest.mark.parametrize(
    ("kept", "dropped"),
    [
        (Recipe("gold_nugget", 9, [("gold_ingot", 1)]), Recipe("gold_ingot", 1, [("gold_nugget", 9)])),
        (Recipe("iron_nugget", 9, [("iron_ingot", 1)]), Recipe("iron_ingot", 1, [("iron_nugget", 9)])),
        (
            Recipe("honey_bottle", 4, [("honey_block", 1), ("glass_bottle", 4)]),
            Recipe("honey_block", 1, [("honey_bottle", 4)]),
        ),
    ],
)
def test_the_cycle_rule_on_each_pair_in_any_order(kept: Recipe, dropped: Recipe) -> None:
    for recipes in ([kept, dropped], [dropped, kept]):
        assert break_cycles(recipes) == ([kept], [dropped])
    # with the pair's other recipes around (the nuggets' uses, the glass bottle's recipe)
    lantern = Recipe("lantern", 1, [("torch", 1), ("iron_nugget", 8)])
    bottle = Recipe("glass_bottle", 3, [("glass", 3)])
    for recipes in ([lantern, dropped, bottle, kept], [kept, bottle, dropped, lantern]):
        out, gone = break_cycles(recipes)
        assert gone == [dropped] and set(out) == {kept, lantern, bottle}


def test_cycle_breaking_does_not_depend_on_order() -> None:
    recipes = recipes_from_table(TABLE, TAGS)
    kept, dropped = break_cycles([r for r in recipes if not is_decompression(r)])
    for seed in (7, 11):
        mixed = [r for r in recipes if not is_decompression(r)]
        random.Random(seed).shuffle(mixed)
        kept2, dropped2 = break_cycles(mixed)
        assert kept2 == kept and [r.line for r in dropped2] == [r.line for r in dropped]
    # the table's rows in any order give the same recipes, ingredient order included
    rows = list(TABLE)
    random.Random(3).shuffle(rows)
    assert [r.line for r in recipes_from_table(rows, TAGS)] == [r.line for r in recipes]


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
