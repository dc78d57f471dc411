"""Executor designs, selected by ``RunConfig.executor.kind``.

Every executor runs one (sub-)task in the environment and reports an ``ExecutionResult``; the
strategies (ADaPT and the baselines) do not care which design it is. Built-ins: ``react``,
``stateact``, ``stateflow``, ``spec`` and ``tools``. A package adds one with an entry point::

    [project.entry-points."adapt.executors"]
    mine = "my_package.executor:MyExecutor"

and a program with ``register_executor("mine", MyExecutor)``. The target is called as
``factory(run)`` (``factory(run, max_steps=n)`` when a caller fixes the step budget) and returns
an ``Executor`` (subclass ``EpisodeExecutor`` to get the shared
episode's rules, or implement ``execute`` yourself).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from adapt.engine.plugins import Registry

if TYPE_CHECKING:
    from adapt.engine.executors.base import Executor
    from adapt.engine.runtime import Run

#: the entry-point group plug-in packages register their executors in
ENTRY_POINT_GROUP = "adapt.executors"

#: built-in executors: kind -> ``module:attribute``, imported on first use
BUILTINS: dict[str, str] = {
    "react": "adapt.engine.executors.react:ReActExecutor",
    "stateact": "adapt.engine.executors.stateact:StateActExecutor",
    "stateflow": "adapt.engine.executors.stateflow.executor:StateFlowExecutor",
    "spec": "adapt.engine.executors.spec_agent.executor:SpecExecutor",
    "tools": "adapt.engine.executors.tools:ToolsExecutor",
}

ExecutorFactory = Callable[..., "Executor"]
EXECUTORS: Registry[ExecutorFactory] = Registry("executor kind", BUILTINS, ENTRY_POINT_GROUP,
                                                sort=False)


def register_executor(kind: str, factory: ExecutorFactory) -> None:
    EXECUTORS.register(kind, factory)


def available_executors() -> list[str]:
    return EXECUTORS.names()


def make_executor(run: Run, max_steps: int | None = None) -> Executor:
    """The executor ``run.config.executor.kind`` names, for ``run`` (``max_steps``: its step
    budget instead of the configured one; strategies pass ``ExecuteOptions`` per run instead)."""
    factory = EXECUTORS.get(run.config.executor.kind)
    return factory(run) if max_steps is None else factory(run, max_steps=max_steps)
