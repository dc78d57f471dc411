"""``KeysEnv``: find the keys, unlock the doors, open the chest."""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar, Self

from adapt.envs import BaseEnvironment, StepResult
from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapt_env_keys.world import CHEST_KEY, COLOURS, DISTRACTORS, ROOM_NAMES, House, build_house

logger = logging.getLogger(__name__)

FAILURE_PREFIX = "Could not"


ACTION_GRAMMAR = """\
look  (describe the room you are in: items, exits, the chest)
inventory  (list what you carry)
go to <room>  (through a door of the room you are in; a locked door must be unlocked first)
take <item>  (pick up an item in the room, e.g. take red key)
unlock door to <room> with <colour> key  (from the room on the other side of the door)
open chest  (in the chest's room, carrying the brass key)
think: <thought>  (changes nothing; the observation is OK.)"""

_ARTICLE = r"(?:(?:the|a|an) )?"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("look", r"look(?: around)?"),
        ("inventory", r"inventory|inv|i"),
        ("go", rf"go (?:to )?{_ARTICLE}(?P<room>.+)"),
        ("take", rf"take {_ARTICLE}(?P<item>.+)"),
        (
            "unlock",
            rf"unlock {_ARTICLE}door (?:to|of) {_ARTICLE}(?P<room>.+?) "
            rf"with {_ARTICLE}(?P<colour>.+?)(?: key)?",
        ),
        ("open", rf"open {_ARTICLE}chest"),
    )
)


class KeysConfig(BaseModel):
    """One house: the seed picks the rooms, doors, locks and where everything lies."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"seed": 0},
                {"seed": 7, "rooms": 8, "locked_doors": 4, "distractors": 4},
            ]
        },
    )

    seed: int = Field(default=0, ge=0, description="picks the house; same seed, same house")
    rooms: int = Field(default=5, ge=2, le=len(ROOM_NAMES), description="number of rooms")
    locked_doors: int = Field(
        default=2, ge=0, le=len(COLOURS), description="locked doors; at most rooms - 1"
    )
    distractors: int = Field(
        default=2, ge=0, le=len(DISTRACTORS), description="useless items lying about"
    )

    @model_validator(mode="after")
    def _doors_fit(self) -> Self:
        if self.locked_doors > self.rooms - 1:
            raise ValueError(
                f"locked_doors ({self.locked_doors}) must be at most rooms - 1 ({self.rooms - 1})"
            )
        return self


def _a(item: str) -> str:
    return f"an {item}" if item[0] in "aeiou" else f"a {item}"


def _normalise(action: str) -> str:
    text = " ".join(action.lower().split())
    if text.startswith(">"):
        text = text[1:].strip()
    return text.rstrip(".!")


class KeysEnv(BaseEnvironment):
    """A house of rooms; keys open locked doors, the brass key opens the chest."""

    name: ClassVar[str] = "keys"
    description: ClassVar[str] = (
        "Find the keys, unlock the doors and open the chest in a small house of rooms."
    )
    config_model: ClassVar[type[BaseModel]] = KeysConfig
    default_max_steps: ClassVar[int] = 30
    action_grammar: ClassVar[str] = ACTION_GRAMMAR
    prompt_package: ClassVar[str | None] = "adapt_env_keys"

    def __init__(self) -> None:
        self._house: House | None = None
        self._goal = ""
        self._room = ""
        self._inventory: list[str] = []
        self._items: dict[str, list[str]] = {}
        self._unlocked: set[str] = set()
        self._done = False

    # -- the protocol -----------------------------------------------------------------------
    @property
    def goal(self) -> str:
        return self._goal

    def reset(self, **config: Any) -> str:
        settings = KeysConfig.model_validate(config)
        house = build_house(
            settings.seed, settings.rooms, settings.locked_doors, settings.distractors
        )
        self._house = house
        self._goal = f"open the chest in the {house.chest_room}"
        self._room = house.start
        self._inventory = []
        self._items = {room: list(things) for room, things in house.items.items()}
        self._unlocked = set()
        self._done = False
        logger.debug("reset: seed=%s rooms=%s", settings.seed, house.rooms)
        # The engine shows the reset observation as the root task, like task_observation()
        # does for sub-tasks; the agent looks around with its first action.
        return self.task_observation(self._goal)

    def step(self, action: str) -> StepResult:
        text = _normalise(action)
        if text.startswith("think:"):
            return StepResult("OK.", done=self._done)
        if self._done:
            return StepResult("The chest is already open; there is nothing left to do.", done=True)
        for kind, pattern in _PATTERNS:
            match = pattern.fullmatch(text)
            if match is not None:
                return self._act(kind, match.groupdict())
        shown = action.strip()
        shown = shown if len(shown) <= 40 else f"{shown[:37]}..."
        return StepResult(
            f"{FAILURE_PREFIX} understand {shown!r}. Actions: look, inventory, go to <room>, "
            "take <item>, unlock door to <room> with <colour> key, open chest."
        )

    def salient_state(self) -> str | None:
        if self._house is None:
            return None
        carrying = ", ".join(self._inventory) or "nothing"
        state = f"You are in the {self._room}. You are carrying: {carrying}."
        if self._unlocked:
            state += f" Unlocked doors: to {', to '.join(sorted(self._unlocked))}."
        return state

    def task_observation(self, goal: str) -> str:
        house = self._require_house()
        doors = "; ".join(door.describe() for door in house.doors)
        return (
            f"You are in a house with {len(house.rooms)} rooms: {', '.join(house.rooms)}.\n"
            f"Doors: {doors}.\n"
            f"A locked door opens with the key of its colour; the chest opens with the "
            f"{CHEST_KEY}.\n"
            f"Goal: {goal}."
        )

    def is_failure(self, observation: str) -> bool:
        return observation.startswith(FAILURE_PREFIX)

    # -- the game ---------------------------------------------------------------------------
    def _require_house(self) -> House:
        if self._house is None:
            raise RuntimeError("call reset() before using the environment")
        return self._house

    def _look(self, verb: str = "You are in") -> str:
        house = self._require_house()
        things = self._items[self._room]
        seen = f"You see: {', '.join(_a(t) for t in things)}." if things else "You see no items."
        if self._room == house.chest_room:
            seen += " There is a locked chest here."
        exits = []
        for door in house.neighbours(self._room):
            locked = door.colour is not None and door.inner not in self._unlocked
            exits.append(door.other(self._room) + (" (locked)" if locked else ""))
        return f"{verb} the {self._room}. {seen} Exits: {', '.join(exits)}."

    def _act(self, kind: str, args: dict[str, str]) -> StepResult:
        if kind == "look":
            return StepResult(self._look())
        if kind == "inventory":
            return StepResult(f"You are carrying: {', '.join(self._inventory) or 'nothing'}.")
        if kind == "go":
            return StepResult(self._go(args["room"]))
        if kind == "take":
            return StepResult(self._take(args["item"]))
        if kind == "unlock":
            return StepResult(self._unlock(args["room"], args["colour"]))
        return self._open_chest()

    def _go(self, room: str) -> str:
        house = self._require_house()
        if room not in house.rooms:
            return f"{FAILURE_PREFIX} go to {room!r}: there is no such room."
        if room == self._room:
            return f"{FAILURE_PREFIX} go to the {room}: you are already there."
        door = house.door(self._room, room)
        if door is None:
            return f"{FAILURE_PREFIX} go to the {room}: no door leads there from the {self._room}."
        if door.colour is not None and door.inner not in self._unlocked:
            return f"{FAILURE_PREFIX} go to the {room}: the door is locked."
        self._room = room
        return self._look(verb="You go to")

    def _take(self, item: str) -> str:
        things = self._items[self._room]
        if item not in things:
            return f"{FAILURE_PREFIX} take {item!r}: there is none in the {self._room}."
        things.remove(item)
        self._inventory.append(item)
        return f"You take the {item}."

    def _unlock(self, room: str, colour: str) -> str:
        house = self._require_house()
        door = house.door(self._room, room) if room in house.rooms else None
        if door is None:
            return f"{FAILURE_PREFIX} unlock a door to {room!r}: there is none in the {self._room}."
        if door.colour is None or door.inner in self._unlocked:
            return f"{FAILURE_PREFIX} unlock the door to the {room}: it is not locked."
        key = f"{colour} key"
        if key not in self._inventory:
            return f"{FAILURE_PREFIX} unlock the door to the {room}: you have no {key}."
        if colour != door.colour:
            return f"{FAILURE_PREFIX} unlock the door to the {room}: the {key} does not fit."
        self._unlocked.add(door.inner)
        return f"You unlock the door to the {room} with the {key}."

    def _open_chest(self) -> StepResult:
        house = self._require_house()
        if self._room != house.chest_room:
            return StepResult(f"{FAILURE_PREFIX} open the chest: there is no chest here.")
        if CHEST_KEY not in self._inventory:
            return StepResult(
                f"{FAILURE_PREFIX} open the chest: it is locked and you have no {CHEST_KEY}."
            )
        self._done = True
        return StepResult(
            f"You unlock the chest with the {CHEST_KEY} and open it. It is full of gold!",
            reward=1.0,
            done=True,
            info={"success": True},
        )
