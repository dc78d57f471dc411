"""The ALFWorld engine: textworld's PDDL environment with ALFWorld's demangler, plus caches.

:class:`Household` plays one game (a ``.tw-pddl`` document: PDDL domain, problem and grammar)
exactly as ALFWorld's ``AlfredTWEnv`` does: textworld's ``PddlEnv`` applies the PDDL actions
with Fast Downward, ALFWorld's ``Demangler`` turns PDDL ids (``mug_bar__plus_00_dot_61...``)
into ``mug 1``, and the grammar writes the observations and the admissible commands.

Two caches make it faster without changing what it says (``cache=False`` turns both off; a
test plays the same games both ways and compares every observation and command list):

- **translation**: ``PddlEnv`` translates the PDDL to Fast Downward's SAS format twice per
  state it builds (once plain, once optimised for the planner), and it builds a state on
  ``load`` and again on every ``reset``. The translations are pure functions of the domain
  and problem texts, so they are kept (LRU) by the texts' SHA-256.
- **commands**: every step, ``PddlEnv`` derives the command text of every applicable action
  through the grammar (a TatSu parse each). A command template that reads no fluent predicate
  (no ``#rule#`` and only predicates no action changes, e.g. ``go to [{r.name |
  receptacleatlocation(r, lend)}]``) always derives to the same text for the same action
  arguments, so that text is kept per game.

Fast Downward's translator swaps ``sys.stdout`` and overwrites ``sys.argv`` while it runs; every
translation here runs under one process-wide lock and ``sys.argv`` is restored afterwards.

Without the extra, importing this module raises :class:`~adapt.envs.alfworld.extra.MissingExtra`:
its package's ``__init__`` runs first and checks for the extra.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import fast_downward
import textworld
import textworld.envs.pddl.logic as pddl_logic
from alfworld.agents.utils.misc import Demangler
from textworld.envs import PddlEnv

logger = logging.getLogger(__name__)

_TRANSLATIONS_MAX = 64
_translations: OrderedDict[tuple[str, str, bool], Any] = OrderedDict()
_translate_lock = threading.RLock()
_use_cache: contextvars.ContextVar[bool] = contextvars.ContextVar("alfworld_cache", default=False)
_PREDICATE = re.compile(r"([A-Za-z_][\w-]*)\(")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _CachingFastDownward:
    """Stands in for the ``fast_downward`` module inside ``textworld.envs.pddl.logic``.

    ``pddl2sas`` is memoised only while a :class:`Household` with ``cache=True`` builds a state
    (a context variable says so); any other caller gets the real function, unchanged.
    """

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def pddl2sas(
        self, domain: str, problem: str, verbose: bool = False, optimize: bool = False
    ) -> Any:
        if not _use_cache.get():
            return self._real.pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
        key = (_digest(domain), _digest(problem), bool(optimize))
        with _translate_lock:
            hit = _translations.get(key)
            if hit is not None:
                _translations.move_to_end(key)
                return hit
            result = self._real.pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
            _translations[key] = result
            while len(_translations) > _TRANSLATIONS_MAX:
                _translations.popitem(last=False)
            return result


if not isinstance(pddl_logic.fast_downward, _CachingFastDownward):
    pddl_logic.fast_downward = _CachingFastDownward(fast_downward)


# Each PddlEnv loads its own copy of libdownward.so (its state is global to the copy). Unloading
# a copy (dlclose) can crash the process at exit, so copies are pooled and reused instead: the
# number of copies is the largest number of games open at the same time.
_free_libs: list[Any] = []
_libs_lock = threading.Lock()


def _acquire_lib() -> Any:
    with _libs_lock:
        if _free_libs:
            return _free_libs.pop()
    return fast_downward.load_lib()


def _release_lib(lib: Any) -> None:
    with _libs_lock:
        _free_libs.append(lib)


@contextmanager
def _translating(cache: bool) -> Iterator[None]:
    """Serialise Fast Downward's translator (global stdout/argv), restore ``sys.argv``."""
    argv = list(sys.argv)
    token = _use_cache.set(cache)
    try:
        with _translate_lock:
            yield
    finally:
        _use_cache.reset(token)
        sys.argv[:] = argv


def clear_caches() -> None:
    """Forget every cached translation (e.g. to measure cold resets)."""
    with _translate_lock:
        _translations.clear()


class _CachingGrammar:
    """Wraps a game's grammar: remembers derived command texts that cannot depend on the state."""

    def __init__(self, grammar: Any, fluents: frozenset[str]) -> None:
        self._grammar = grammar
        self._fluents = fluents
        self._static: dict[str, bool] = {}
        self._derived: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grammar, name)

    def _is_static(self, start: str) -> bool:
        known = self._static.get(start)
        if known is None:
            predicates = {p.lower().removeprefix("not_") for p in _PREDICATE.findall(start)}
            known = "#" not in start and not (predicates & self._fluents)
            self._static[start] = known
        return known

    def derive(self, start: str, context: Mapping[str, Any] | None = None) -> str:
        context = context or {}
        if not self._is_static(start):
            return str(self._grammar.derive(start, context))
        mapping = context.get("mapping") or {}
        key = (start, tuple(sorted((str(p.name), str(v.name)) for p, v in mapping.items())))
        text = self._derived.get(key)
        if text is None:
            text = str(self._grammar.derive(start, context))
            self._derived[key] = text
        return text


def _fluent_predicates(task: Any) -> frozenset[str]:
    """Predicates some action (or axiom) of a translated PDDL task can change."""
    names: set[str] = {"="}
    for action in task.actions:
        for effect in action.effects:
            names.add(str(effect.literal.predicate).lower())
    for axiom in getattr(task, "axioms", ()):
        names.add(str(axiom.name).lower())
    return frozenset(names)


class _AlfredPddlEnv(PddlEnv):  # type: ignore[misc]  # textworld is untyped
    """``PddlEnv`` with ALFWorld's demangled names and the caches described above."""

    def __init__(self, cache: bool) -> None:
        # PddlEnv.__init__ minus its load_lib(): the library copy comes from the pool
        textworld.Environment.__init__(
            self, textworld.EnvInfos(admissible_commands=True, won=True)
        )
        self.downward_lib = _acquire_lib()
        self._cache = cache

    def release(self) -> None:
        lib, self.downward_lib = self.downward_lib, None
        if lib is not None:
            _release_lib(lib)

    def load(self, filename_or_data: Any) -> None:
        with _translating(self._cache):
            super().load(filename_or_data)
        # ALFWorld's AlfredDemangler, applied the way its wrapper does
        demangler = Demangler(game_infos=self._entity_infos, shuffle=False)
        for info in self._entity_infos.values():
            info.name = demangler.demangle_alfred_name(info.id)
        if self._cache:
            fluents = _fluent_predicates(self._pddl_state.task)
            self._logic.grammar = _CachingGrammar(self._logic.grammar, fluents)

    def reset(self) -> Any:
        with _translating(self._cache):
            return super().reset()

    def plan(self, names: Any = None) -> list[str]:
        """A cheapest plan from the current state (Fast Downward), as commands; ``[]``: none.
        ``names``: the entity infos to name the plan's ids with (default: this game's)."""
        with _translate_lock:
            return list(self._pddl_state.replan(names or self._entity_infos))


class Household:
    """One ALFWorld game on the real engine. Not thread-safe: one caller at a time."""

    def __init__(self, *, cache: bool = True) -> None:
        self.cache = cache
        self._env: _AlfredPddlEnv | None = None
        self._state: Any = None
        self._loaded: str | None = None

    # -- episode ------------------------------------------------------------------------------
    def load(self, game: Mapping[str, Any]) -> None:
        """Load a game document (``pddl_domain``, ``pddl_problem``, ``grammar``)."""
        data = {
            "pddl_domain": game["pddl_domain"],
            "pddl_problem": game["pddl_problem"],
            "grammar": game["grammar"],
        }
        key = _digest("\0".join((data["pddl_domain"], data["pddl_problem"], data["grammar"])))
        if self._env is None:
            self._env = _AlfredPddlEnv(self.cache)
        if key != self._loaded or not self.cache:
            self._loaded = None
            self._env.load(data)
            self._loaded = key
        self._state = None

    def reset(self) -> str:
        """Start the loaded game; returns ALFWorld's intro text."""
        env = self._require_env()
        self._state = env.reset()
        return str(self._state.feedback)

    def step(self, command: str) -> tuple[str, bool]:
        """Play ``command`` (an admissible command, else nothing happens): (feedback, won)."""
        env = self._require_env()
        if self._state is None:
            raise RuntimeError("reset() the game before step()")
        self._state, _, _ = env.step(command)
        return str(self._state.feedback), bool(self._state["won"])

    # -- queries --------------------------------------------------------------------------------
    @property
    def admissible_commands(self) -> list[str]:
        """The commands that do something now, sorted (textworld's order)."""
        return [] if self._state is None else list(self._state["admissible_commands"])

    @property
    def won(self) -> bool:
        return self._state is not None and bool(self._state["won"])

    def plan(self, names: Household | None = None) -> list[str]:
        """A cheapest plan to the goal from the current state; ``[]`` if there is none.

        ``names``: another loaded game with the same PDDL ids (e.g. the whole household this
        game abstracts) whose names the plan's commands should use."""
        other = None if names is None else names._require_env()._entity_infos
        return self._require_env().plan(other)

    def location(self) -> str | None:
        """The receptacle the agent stands at (``countertop 1``), or ``None`` (mid-room)."""
        env = self._require_env()
        if self._state is None:
            return None
        here = {v.name for f in env._pddl_state.facts if f.name == "atlocation"
                for v in f.arguments[1:]}
        infos = env._entity_infos
        at = sorted(
            str(infos[f.arguments[0].name].name).strip()
            for f in env._pddl_state.facts
            if f.name == "receptacleatlocation" and f.arguments[1].name in here
        )
        return at[0] if at else None

    def inventory(self) -> list[str]:
        """What the agent holds (``["mug 1"]``)."""
        if self._state is None:
            return []
        env = self._require_env()
        infos = env._entity_infos
        return sorted(
            str(infos[f.arguments[1].name].name).strip()
            for f in env._pddl_state.facts
            if f.name == "holds" and len(f.arguments) == 2
        )

    def close(self) -> None:
        """Give Fast Downward's library back to the pool; the object may be loaded again."""
        env, self._env = self._env, None
        self._state = None
        self._loaded = None
        if env is not None:
            env.release()

    def _require_env(self) -> _AlfredPddlEnv:
        if self._env is None:
            raise RuntimeError("load() a game first")
        return self._env
