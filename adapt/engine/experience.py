"""The experience library, as the engine sees it: verified sub-goal solutions kept across tasks.

A *solution* is the action sequence that solved a task node's goal in an environment, kept
only when the environment confirmed the goal (the node's ``verdict`` ``confirmed``; see
``claim_checks``). With ``reuse.skills`` on, the node runner replays a stored solution for a
node's goal in the live environment before its executor runs (``adapt.engine.reuse``): a
replay the environment confirms ends the node with no LLM call (termination ``reused``, and
``Node.reused`` names where the solution came from); one it does not confirm demotes the
entry and the executor runs as usual.

An entry of kind ``plan`` (``reuse.plans``) holds instead the decomposition of a goal the
environment confirmed once its sub-tasks ran: the plan's steps (``actions``) and its
execution order (``logic``); ADaPT takes it in place of a planner call, or shows it to the
planner (``reuse.plans_mode``), and a taken plan whose goal is not confirmed is demoted as a
failed replay is (``adapt.engine.reuse``).

The engine reads and writes a library only through :class:`ExperienceLibrary` (the service's
is per tenant, in the database: ``adapt.store.library``; :class:`MemoryLibrary` is the
in-process one of the bench and of tests). What a run learned and how its replays went is
handed over once, when the task ends (:meth:`ExperienceLibrary.save`), so an attempt that
stops half-way writes nothing, and a resumed attempt finds the same entries as the first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

#: consecutive failed replays after which an entry is dropped (no longer found)
DROP_AFTER = 2
#: goals longer than this (normalised) are not kept
MAX_GOAL_CHARS = 1000
#: solutions with more actions than this, or an action longer than this, are not kept
MAX_ACTIONS = 100
MAX_ACTION_CHARS = 2000
#: the largest count an entry keeps (a 32-bit integer column)
MAX_COUNT = 2**31 - 1
#: what an exported library is (``format``), its version, and the fields of an entry in it
EXPORT_FORMAT = "adapt-library"
EXPORT_VERSION = 1
EXPORT_FIELDS = ("environment", "kind", "goal", "goal_key", "actions", "logic", "origin", "model",
                 "simulated", "uses", "failures")
#: what an entry holds: a sub-goal's solution (actions replayed, ``reuse.skills``) or a goal's
#: decomposition (the plan's steps and execution order, ``reuse.plans``)
SKILL = "skill"
PLAN = "plan"
KINDS = (SKILL, PLAN)


def goal_key(goal: str) -> str:
    """A goal normalised for exact retrieval: lower case, one space between words, no final
    full stop (``"Craft  4 Oak Planks."`` -> ``"craft 4 oak planks"``)."""
    return " ".join(goal.lower().split()).rstrip(".")


@runtime_checkable
class KeyedGoals(Protocol):
    """An environment that says which goals mean the same: ``experience_key(goal)`` is the
    goal's canonical form (TextCraft: ``gain 1 minecraft:beehive`` for ``craft beehive`` and
    ``craft 1 beehive using 6 planks, 3 honeycomb``), ``None`` when it cannot tell."""

    def experience_key(self, goal: str) -> str | None: ...


def key_of(env: object, goal: str) -> str:
    """The key a goal is stored and found under: the environment's canonical form where it
    gives one (``KeyedGoals``), else :func:`goal_key`."""
    key = env.experience_key(goal) if isinstance(env, KeyedGoals) else None
    return key if key else goal_key(goal)


@dataclass(frozen=True, slots=True)
class Solution:
    """A stored solution: what is replayed, and where it came from."""

    id: int
    environment: str
    goal: str
    actions: tuple[str, ...]
    #: where it was learned: ``{"task": <task id or label>, "node": <node id>}``
    origin: dict[str, Any] = field(default_factory=dict)
    #: the executor model that found it was a simulated one
    simulated: bool = False
    model: str | None = None
    #: ``skill``: ``actions`` are replayed; ``plan``: ``actions`` are a plan's steps, ``logic``
    #: its execution order (``(Step 1 AND Step 2)``)
    kind: str = SKILL
    logic: str | None = None


@dataclass(frozen=True, slots=True)
class Learned:
    """A solution a run found: a node whose goal the environment confirmed."""

    environment: str
    goal: str
    #: the key it is stored under (:func:`key_of`)
    key: str
    actions: tuple[str, ...]
    node_id: int
    model: str | None
    simulated: bool
    #: ``plan``: a decomposition that worked (``actions``: its steps, ``logic``: its order)
    kind: str = SKILL
    logic: str | None = None


@dataclass(slots=True)
class ExperienceReport:
    """What one task run hands to the library when it ends."""

    learned: list[Learned] = field(default_factory=list)
    #: entries replayed and confirmed (one use each time)
    used: list[int] = field(default_factory=list)
    #: entries replayed and not confirmed (one failure each time)
    failed: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.learned or self.used or self.failed)


@runtime_checkable
class ExperienceLibrary(Protocol):
    """A library of verified solutions, as one task run sees it."""

    async def find(self, environment: str, key: str,
                   exclude: frozenset[int] = frozenset(), kind: str = SKILL
                   ) -> Solution | None:
        """The solution to replay (``kind`` ``plan``: the plan to reuse) for a goal of
        ``key`` (:func:`key_of`; exact match), not one of ``exclude`` (those that failed
        earlier in this run); ``None``: none."""
        ...

    async def save(self, report: ExperienceReport) -> None:
        """Take in what a run learned and how its replays went."""
        ...


@dataclass(slots=True)
class Entry:
    """One entry of a :class:`MemoryLibrary` (the store's row has the same fields)."""

    id: int
    environment: str
    goal: str
    goal_key: str
    actions: tuple[str, ...]
    origin: dict[str, Any]
    model: str | None = None
    simulated: bool = False
    uses: int = 0
    failures: int = 0
    failure_streak: int = 0
    dropped: bool = False
    kind: str = SKILL
    logic: str | None = None

    def solution(self) -> Solution:
        return Solution(self.id, self.environment, self.goal, self.actions, dict(self.origin),
                        self.simulated, self.model, self.kind, self.logic)


class MemoryLibrary:
    """An in-process library shared by many runs (the bench, tests). ``for_task(origin)``
    gives the view one run uses, which records where its solutions came from."""

    def __init__(self) -> None:
        self.entries: dict[int, Entry] = {}
        self._ids = itertools.count(1)

    def for_task(self, task: str, *, learn: bool = True) -> TaskLibrary:
        """The view run ``task`` uses; ``learn=False``: a frozen library (what the run
        learned and how its replays went is not kept)."""
        return TaskLibrary(self, task, learn)

    def copy(self) -> MemoryLibrary:
        """An independent copy (same ids and counts)."""
        other = MemoryLibrary()
        other.entries = {i: replace(e, origin=dict(e.origin)) for i, e in self.entries.items()}
        other._ids = itertools.count(max(self.entries, default=0) + 1)
        return other

    def export(self) -> dict[str, Any]:
        """The live entries as an export document (the format of ``GET /library/export``)."""
        rows = [e for e in self.entries.values() if not e.dropped]
        return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "entries": [
            {**{f: getattr(e, f) for f in EXPORT_FIELDS}, "actions": list(e.actions)}
            for e in rows]}

    @classmethod
    def load(cls, document: dict[str, Any]) -> MemoryLibrary:
        """A library from an export document (``GET /library/export``, :meth:`export`)."""
        if document.get("format") != EXPORT_FORMAT or document.get("version") != EXPORT_VERSION:
            raise ValueError(f"not an {EXPORT_FORMAT} version {EXPORT_VERSION} document")
        library = cls()
        for item in document.get("entries") or []:
            key = str(item.get("goal_key") or goal_key(str(item["goal"])))
            kind = str(item.get("kind") or SKILL)
            if kind not in KINDS:
                raise ValueError(f"unknown entry kind {kind!r}")
            if library.live(str(item["environment"]), key, kind) is not None:
                continue
            entry_id = next(library._ids)
            library.entries[entry_id] = Entry(
                entry_id, str(item["environment"]), str(item["goal"]), key,
                tuple(str(a) for a in item["actions"]),
                {**(item.get("origin") or {}), "imported": True}, item.get("model"),
                bool(item.get("simulated")), int(item.get("uses") or 0),
                int(item.get("failures") or 0), kind=kind, logic=item.get("logic"))
        return library

    def live(self, environment: str, key: str, kind: str = SKILL) -> Entry | None:
        for entry in self.entries.values():
            if (entry.environment == environment and entry.goal_key == key
                    and entry.kind == kind and not entry.dropped):
                return entry
        return None

    def apply(self, report: ExperienceReport, task: str) -> None:
        """``report`` of run ``task``: counts, drops, and new entries (one live entry per
        environment and goal: a goal that has one keeps it)."""
        for entry_id in report.used:
            entry = self.entries.get(entry_id)
            if entry is not None:
                entry.uses += 1
                entry.failure_streak = 0
        for entry_id in report.failed:
            entry = self.entries.get(entry_id)
            if entry is not None:
                entry.failures += 1
                entry.failure_streak += 1
                entry.dropped = entry.dropped or entry.failure_streak >= DROP_AFTER
        for item in report.learned:
            key = item.key
            if self.live(item.environment, key, item.kind) is None:
                entry_id = next(self._ids)
                self.entries[entry_id] = Entry(
                    entry_id, item.environment, item.goal, key, item.actions,
                    {"task": task, "node": item.node_id}, item.model, item.simulated,
                    kind=item.kind, logic=item.logic)


@dataclass(slots=True)
class TaskLibrary:
    """One run's view of a :class:`MemoryLibrary`."""

    library: MemoryLibrary
    task: str
    learn: bool = True

    async def find(self, environment: str, key: str,
                   exclude: frozenset[int] = frozenset(), kind: str = SKILL
                   ) -> Solution | None:
        entry = self.library.live(environment, key, kind)
        return None if entry is None or entry.id in exclude else entry.solution()

    async def save(self, report: ExperienceReport) -> None:
        if self.learn:
            self.library.apply(report, self.task)


__all__ = [
    "DROP_AFTER", "EXPORT_FIELDS", "EXPORT_FORMAT", "EXPORT_VERSION", "KINDS", "MAX_ACTIONS",
    "MAX_ACTION_CHARS", "MAX_COUNT", "MAX_GOAL_CHARS", "PLAN", "SKILL", "Entry", "ExperienceLibrary",
    "ExperienceReport", "KeyedGoals", "Learned", "MemoryLibrary", "Solution", "TaskLibrary",
    "goal_key", "key_of",
]
