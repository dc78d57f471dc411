"""The explicit tag table (``tags.json``): which 1.16.5 item tags crafting recipes use.

Crafting recipes name a tag where any of several items will do, and TextCraft games show the
tag (``craft 4 stick using 2 planks``). The recipe table (``recipes-1.16.5.tsv``) keeps those tag
ingredients; this table gives each tag's members (the game's ``data/minecraft/tags/items``) and
the results that use it (``used_by``, checked against the recipe table). Two kinds of tag:

- ``category`` (``planks``, ``wool``): a generic category; any member satisfies the ingredient.
  A category is not an item: it cannot be fetched or held.
- ``material`` (``oak logs``, ``coals``, ...): a base material that can be fetched directly with
  ``get``; a held member (e.g. ``oak log``) satisfies the ingredient too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal, cast

TagKind = Literal["category", "material"]


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    kind: TagKind
    #: member item ids, in table order, ``#tag`` references expanded
    members: tuple[str, ...]
    #: result item ids whose crafting recipes use this tag
    used_by: tuple[str, ...]


def _expand(name: str, raw: Mapping[str, Mapping[str, object]], seen: tuple[str, ...]) -> list[str]:
    if name in seen:
        raise ValueError(f"tags.json: tag reference cycle through {name!r}")
    out: list[str] = []
    for member in cast(list[str], raw[name]["members"]):
        if member.startswith("#"):
            ref = member[1:]
            if ref not in raw:
                raise ValueError(f"tags.json: {name!r} references unknown tag {ref!r}")
            out.extend(_expand(ref, raw, (*seen, name)))
        else:
            out.append(member)
    return out


def parse_tags(text: str) -> dict[str, Tag]:
    """Parse a ``tags.json`` text into ``{tag name: Tag}``."""
    raw = cast(dict[str, dict[str, object]], json.loads(text)["tags"])
    tags: dict[str, Tag] = {}
    for name in sorted(raw):
        kind = raw[name]["kind"]
        if kind not in ("category", "material"):
            raise ValueError(f"tags.json: tag {name!r} has unknown kind {kind!r}")
        members = tuple(dict.fromkeys(_expand(name, raw, ())))
        used_by = tuple(cast(list[str], raw[name]["used_by"]))
        tags[name] = Tag(name, kind, members, used_by)
    return tags


@cache
def load_tags() -> Mapping[str, Tag]:
    """The packaged tag table (read once per process)."""
    text = resources.files("adapt.envs.textcraft").joinpath("tags.json").read_text(encoding="utf-8")
    return parse_tags(text)
