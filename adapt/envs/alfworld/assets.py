"""ALFWorld's own data, read from the installed ``alfworld`` package (pinned to 0.4.2).

Nothing is copied into this project: the PDDL domain (``alfworld/data/alfred.pddl``), the text
grammar (``alfred.twl2``), the goal library (``alfworld.gen.goal_library``), the object and
receptacle tables (``alfworld.gen.constants``) and the FloorPlan layouts
(``alfworld/gen/layouts/FloorPlan<N>-objects.json`` and ``-openable.json``) all come from the
package, so a game generated here is written in exactly the terms ALFWorld's engine plays.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import import_module, resources
from types import ModuleType
from typing import Any, Literal

#: the six ALFWorld task types: our short name -> ALFWorld's name (``traj_data["task_type"]``)
TASK_TYPES: dict[str, str] = {
    "pick": "pick_and_place_simple",
    "clean": "pick_clean_then_place_in_recep",
    "heat": "pick_heat_then_place_in_recep",
    "cool": "pick_cool_then_place_in_recep",
    "examine": "look_at_obj_in_light",
    "pick_two": "pick_two_obj_and_place",
}
TaskType = Literal["pick", "clean", "heat", "cool", "examine", "pick_two"]
#: ALFWorld's name -> our short name
SHORT_TASK_TYPES: dict[str, str] = {v: k for k, v in TASK_TYPES.items()}

#: room kinds by FloorPlan number range (ALFRED: 1-30 kitchens, 201-230 living rooms, ...)
ROOM_KINDS: tuple[tuple[str, range], ...] = (
    ("Kitchen", range(1, 31)),
    ("LivingRoom", range(201, 231)),
    ("Bedroom", range(301, 331)),
    ("Bathroom", range(401, 431)),
)

_LAYOUT = re.compile(r"FloorPlan(\d+)-objects\.json")


def _package() -> ModuleType:
    return import_module("alfworld")


def _read(*parts: str) -> str:
    return resources.files("alfworld").joinpath(*parts).read_text(encoding="utf-8")


@cache
def domain() -> str:
    """The PDDL domain ALFWorld games are played in."""
    return _read("data", "alfred.pddl")


@cache
def grammar() -> str:
    """The TextWorld grammar (``.twl2``) with the task sentence placeholder ``UNKNOWN GOAL``."""
    return _read("data", "alfred.twl2")


@cache
def constants() -> ModuleType:
    """``alfworld.gen.constants``: object classes, receptacles and what they can hold."""
    return import_module("alfworld.gen.constants")


@cache
def goal_library() -> dict[str, dict[str, Any]]:
    """``alfworld.gen.goal_library.gdict``: goal PDDL and task sentence templates by type."""
    gdict: dict[str, dict[str, Any]] = import_module("alfworld.gen.goal_library").gdict
    return gdict


def room_kind(scene: int) -> str:
    for kind, numbers in ROOM_KINDS:
        if scene in numbers:
            return kind
    return "Unknown"


@dataclass(frozen=True, slots=True)
class Layout:
    """One FloorPlan: the object classes in it and its receptacles with their viewpoints."""

    scene: int
    #: object classes present in the scene (``FloorPlan<N>-objects.json``)
    classes: tuple[str, ...]
    #: receptacle id (e.g. ``Cabinet|+00.68|+00.50|-02.20``) -> ``[x, z, rotation, horizon]``
    receptacles: dict[str, tuple[float, float, float, float]]

    @property
    def kind(self) -> str:
        return room_kind(self.scene)


@cache
def scenes() -> tuple[int, ...]:
    """Every FloorPlan number that has a layout, sorted."""
    folder = resources.files("alfworld").joinpath("gen", "layouts")
    found = []
    for entry in folder.iterdir():
        m = _LAYOUT.fullmatch(entry.name)
        if m is not None and folder.joinpath(f"FloorPlan{m.group(1)}-openable.json").is_file():
            found.append(int(m.group(1)))
    return tuple(sorted(found))


@cache
def layout(scene: int) -> Layout:
    """The layout of ``FloorPlan<scene>``; ``KeyError`` for a scene without one."""
    if scene not in scenes():
        raise KeyError(scene)
    classes = json.loads(_read("gen", "layouts", f"FloorPlan{scene}-objects.json"))
    points = json.loads(_read("gen", "layouts", f"FloorPlan{scene}-openable.json"))
    return Layout(
        scene=scene,
        classes=tuple(sorted(set(classes))),
        receptacles={rid: (p[0], p[1], p[2], p[3]) for rid, p in sorted(points.items())},
    )


def version() -> str:
    """The installed alfworld version."""
    return str(getattr(_package(), "__version__", "unknown"))
