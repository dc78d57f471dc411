"""The house: rooms joined by doors, some locked, keys lying about. Pure and deterministic.

A house is a tree of rooms grown from the first room (where the agent starts): room ``i`` gets a
door to one earlier room. The chest stands in the last room, whose door is locked whenever any
door is. The key of a locked door into room ``i`` lies in an earlier room, so every room can be
reached using keys found on the way: every house is solvable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ROOM_NAMES: tuple[str, ...] = (
    "hall",
    "kitchen",
    "library",
    "study",
    "cellar",
    "attic",
    "pantry",
    "gallery",
    "bedroom",
    "garden",
)
COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "white", "black", "purple")
DISTRACTORS: tuple[str, ...] = ("candle", "old map", "rusty spoon", "feather", "teacup", "clock")
CHEST_KEY = "brass key"


@dataclass(frozen=True, slots=True)
class Door:
    """A door between ``outer`` (nearer the start) and ``inner``; ``colour`` if locked."""

    outer: str
    inner: str
    colour: str | None = None

    def joins(self, room: str) -> bool:
        return room in (self.outer, self.inner)

    def other(self, room: str) -> str:
        return self.inner if room == self.outer else self.outer

    def describe(self) -> str:
        lock = f" (locked, {self.colour})" if self.colour else ""
        return f"{self.outer} - {self.inner}{lock}"


@dataclass(frozen=True, slots=True)
class House:
    rooms: tuple[str, ...]
    doors: tuple[Door, ...]
    #: what lies in each room at the start, sorted
    items: dict[str, tuple[str, ...]]

    @property
    def start(self) -> str:
        return self.rooms[0]

    @property
    def chest_room(self) -> str:
        return self.rooms[-1]

    def door(self, a: str, b: str) -> Door | None:
        for door in self.doors:
            if door.joins(a) and door.joins(b) and a != b:
                return door
        return None

    def neighbours(self, room: str) -> list[Door]:
        return [door for door in self.doors if door.joins(room)]


def build_house(seed: int, rooms: int, locked_doors: int, distractors: int) -> House:
    """The house for these settings: the same arguments always give the same house."""
    if not 2 <= rooms <= len(ROOM_NAMES):
        raise ValueError(f"rooms must be between 2 and {len(ROOM_NAMES)}")
    if not 0 <= locked_doors <= min(rooms - 1, len(COLOURS)):
        raise ValueError("locked_doors must be between 0 and rooms - 1")
    if not 0 <= distractors <= len(DISTRACTORS):
        raise ValueError(f"distractors must be between 0 and {len(DISTRACTORS)}")
    rng = random.Random(seed)
    names = rng.sample(ROOM_NAMES, rooms)
    parents = [rng.randrange(i) if i else 0 for i in range(rooms)]
    last = rooms - 1
    locked = [last, *rng.sample(range(1, last), locked_doors - 1)] if locked_doors else []
    colours = dict(zip(sorted(locked), rng.sample(COLOURS, locked_doors), strict=True))
    items: dict[str, list[str]] = {name: [] for name in names}
    for room, colour in colours.items():
        items[names[rng.randrange(room)]].append(f"{colour} key")
    items[names[rng.randrange(rooms)]].append(CHEST_KEY)
    for thing in rng.sample(DISTRACTORS, distractors):
        items[names[rng.randrange(rooms)]].append(thing)
    doors = tuple(Door(names[parents[i]], names[i], colours.get(i)) for i in range(1, rooms))
    return House(
        rooms=tuple(names),
        doors=doors,
        items={name: tuple(sorted(things)) for name, things in items.items()},
    )
