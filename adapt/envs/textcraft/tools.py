"""TextCraft's actions as tools: ``get``, ``craft`` and ``inventory`` (the tools executor's
view of the same actions the text executors write; ``adapt.envs.tools``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapt.envs.tools import ActionTool, ToolSpec, arguments, count, one_line

_ITEM = one_line("The item's name as the crafting commands write it, e.g. oak planks.")


def _craft(args: Mapping[str, Any]) -> str:
    using = ", ".join(f"{i['count']} {i['item']}" for i in args["ingredients"])
    return f"craft {args['count']} {args['item']} using {using}"


TOOLS: tuple[ActionTool, ...] = (
    ActionTool(ToolSpec(
        "get", "Fetch a base material: an item that no crafting command produces (e.g. "
        "3 honeycomb or 2 dark oak logs). Items with a crafting command must be crafted.",
        arguments({"item": _ITEM, "count": count("How many to fetch.")},
                  examples=[{"item": "oak logs", "count": 1}])),
        "get {count} {item}"),
    ActionTool(ToolSpec(
        "craft", "Craft an item with one of the crafting commands, with exactly its ingredient "
        "counts; the ingredients must be in the inventory. For a category such as planks, name "
        "the kind held (e.g. oak planks). One craft makes the number the command states.",
        arguments({
            "item": _ITEM,
            "count": count("How many the command makes."),
            "ingredients": {
                "type": "array", "minItems": 1, "description": "The command's ingredients.",
                "items": arguments({"item": _ITEM, "count": count("How many it takes.")})}},
            examples=[{"item": "oak planks", "count": 4,
                       "ingredients": [{"item": "oak logs", "count": 1}]}])),
        _craft),
    ActionTool(ToolSpec("inventory", "List the items carried and their counts.",
                        arguments({}), read_only=True, idempotent=True), "inventory"),
)
