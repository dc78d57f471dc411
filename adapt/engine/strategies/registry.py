"""Strategies: how a task is driven. All share the same executor.

A strategy is ``async (run, goal, task_observation) -> root Node``. Built-ins are listed in
``BUILTINS``; a package adds one with an entry point in the ``adapt.strategies`` group, a
program with ``register(name)`` (a decorator).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from adapt.engine.plugins import Registry

if TYPE_CHECKING:
    from adapt.engine.runtime import Run
    from adapt.engine.tree import Node

Strategy = Callable[["Run", str, str], Awaitable["Node"]]

#: the entry-point group plug-in packages register their strategies in
ENTRY_POINT_GROUP = "adapt.strategies"

#: built-in strategies: name -> ``module:attribute``, imported on first use
BUILTINS: dict[str, str] = {
    "adapt": "adapt.engine.strategies.core:adapt_strategy",
    "react": "adapt.engine.strategies.core:react_strategy",
    "plan_and_execute": "adapt.engine.strategies.plan_and_execute:plan_and_execute_strategy",
    "try_again": "adapt.engine.strategies.trials:try_again_strategy",
    "reflexion": "adapt.engine.strategies.trials:reflexion_strategy",
    "stateflow": "adapt.engine.strategies.stateflow:stateflow_strategy",
}

#: built-in strategies that run no plan (no node has siblings), so that
#: ``approval.parallel_siblings`` means nothing for them
NO_SIBLINGS: frozenset[str] = frozenset({"react", "try_again", "reflexion", "stateflow"})

STRATEGIES: Registry[Strategy] = Registry("strategy", BUILTINS, ENTRY_POINT_GROUP)


def register(name: str) -> Callable[[Strategy], Strategy]:
    def deco(fn: Strategy) -> Strategy:
        STRATEGIES.register(name, fn)
        return fn

    return deco


def get_strategy(name: str) -> Strategy:
    return STRATEGIES.get(name)


def available_strategies() -> list[str]:
    return STRATEGIES.names()
