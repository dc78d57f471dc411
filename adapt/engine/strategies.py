"""Strategies: how a task is driven. All share the same executor.

A strategy is ``async (run, goal, task_observation) -> root Node``. Register new ones with
``register``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from adapt.engine.controller import AdaptController
from adapt.engine.executors import make_executor
from adapt.engine.run import Run
from adapt.engine.tree import Node
from adapt.errors import UserError

Strategy = Callable[[Run, str, str], Awaitable[Node]]
_STRATEGIES: dict[str, Strategy] = {}


def register(name: str) -> Callable[[Strategy], Strategy]:
    def deco(fn: Strategy) -> Strategy:
        _STRATEGIES[name] = fn
        return fn

    return deco


def get_strategy(name: str) -> Strategy:
    try:
        return _STRATEGIES[name]
    except KeyError:
        raise UserError(
            f"unknown strategy {name!r}; available: {', '.join(available_strategies())}"
        ) from None


def available_strategies() -> list[str]:
    return sorted(_STRATEGIES)


@register("adapt")
async def adapt_strategy(run: Run, goal: str, task: str) -> Node:
    root = await run.new_node(kind="task", goal=goal, depth=1)
    await AdaptController(run).solve(root, task)
    return root


@register("react")
async def react_strategy(run: Run, goal: str, task: str) -> Node:
    """The executor alone, with a step budget of ``max_steps x d_max`` (as the paper)."""
    root = await run.new_node(kind="task", goal=goal, depth=1)
    base = run.config.executor.max_steps or run.env.default_max_steps
    controller = AdaptController(run)
    controller.executor = make_executor(run, max_steps=base * run.config.d_max)
    result = await controller.try_executor(root, task)
    await controller.finish(root, result.success)
    return root


# The paper's other baselines register themselves on import (they need ``register`` above).
from adapt.engine import baselines as _baselines  # noqa: E402,F401

# StateFlow registers its standalone strategy (and its executor kind) on import.
from adapt.engine import stateflow as _stateflow  # noqa: E402,F401
