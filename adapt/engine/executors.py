"""Executor designs, selected by ``RunConfig.executor.kind``.

Every executor runs one (sub-)task in the environment and reports an ``ExecutionResult``; the
strategies (ADaPT and the baselines) do not care which design it is. Built-ins: ``react``;
``stateact`` and ``stateflow`` register themselves when their modules are imported.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from importlib import import_module
from typing import Protocol

from adapt.engine.executor import ExecutionResult, ReActExecutor
from adapt.engine.run import Run
from adapt.engine.tree import Node
from adapt.errors import UserError


class Executor(Protocol):
    async def execute(
        self, node: Node, task: str, extra_context: str | None = None
    ) -> ExecutionResult: ...


ExecutorFactory = Callable[[Run, int | None], Executor]
_EXECUTORS: dict[str, ExecutorFactory] = {"react": lambda run, steps: ReActExecutor(run,
                                                                                   max_steps=steps)}
#: kinds whose implementation lives in another module, imported on first use
_LAZY = {"stateact": "adapt.engine.stateact", "stateflow": "adapt.engine.stateflow",
         "spec": "adapt.engine.spec_executor"}


def register_executor(kind: str, factory: ExecutorFactory) -> None:
    _EXECUTORS[kind] = factory


def make_executor(run: Run, max_steps: int | None = None) -> Executor:
    kind = run.config.executor.kind
    if kind not in _EXECUTORS and kind in _LAZY:
        with suppress(ModuleNotFoundError):  # not built yet: reported below
            import_module(_LAZY[kind])
    factory = _EXECUTORS.get(kind)
    if factory is None:
        raise UserError(f"executor kind {kind!r} is not available; available: "
                        f"{', '.join(sorted(_EXECUTORS))}")
    return factory(run, max_steps)
