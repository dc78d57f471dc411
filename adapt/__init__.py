"""adapt: a recursive planner-executor (ADaPT) for LLM agents, as a library and a service.

The public API, importable from here (loaded on first use, so ``import adapt`` stays cheap)::

    from adapt import RunConfig, MemorySink, run_task
    from adapt.envs import create
    from adapt.llm.testing import ScriptedModel

    env = create("textcraft")
    result = await run_task(env, {"seed": 5}, RunConfig(d_max=3), ScriptedModel([...]))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapt.engine import (
        Budget,
        Event,
        ExecutorConfig,
        FanoutSink,
        LLMCall,
        MemorySink,
        Node,
        NullSink,
        PlannerConfig,
        ResolvedConfig,
        RunConfig,
        Step,
        TaskResult,
        TreeSink,
        available_executors,
        available_strategies,
        register_executor,
        resolve_config,
        run_task,
    )
    from adapt.engine.executors.base import ExecuteOptions, ExecutionResult
    from adapt.engine.executors.episode import Episode, EpisodeExecutor, Turn
    from adapt.engine.node_runner import NodeRunner
    from adapt.engine.strategies import register as register_strategy
    from adapt.envs.base import BaseEnvironment, Environment, StepResult
    from adapt.errors import AdaptError, BudgetError, CancelledByUser, UserError
    from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, WrapperModel

#: public name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    **{name: ("adapt.engine", name) for name in (
        "Budget", "Event", "ExecutorConfig", "FanoutSink", "LLMCall", "MemorySink", "Node",
        "NullSink", "PlannerConfig", "ResolvedConfig", "RunConfig", "Step", "TaskResult",
        "TreeSink", "available_executors", "available_strategies", "register_executor",
        "resolve_config", "run_task")},
    "register_strategy": ("adapt.engine.strategies", "register"),
    "ExecuteOptions": ("adapt.engine.executors.base", "ExecuteOptions"),
    "ExecutionResult": ("adapt.engine.executors.base", "ExecutionResult"),
    "Episode": ("adapt.engine.executors.episode", "Episode"),
    "EpisodeExecutor": ("adapt.engine.executors.episode", "EpisodeExecutor"),
    "Turn": ("adapt.engine.executors.episode", "Turn"),
    "NodeRunner": ("adapt.engine.node_runner", "NodeRunner"),
    **{name: ("adapt.envs.base", name) for name in (
        "BaseEnvironment", "Environment", "StepResult")},
    **{name: ("adapt.errors", name) for name in (
        "AdaptError", "BudgetError", "CancelledByUser", "UserError")},
    **{name: ("adapt.llm.base", name) for name in (
        "ChatModel", "ChatRequest", "ChatResponse", "WrapperModel")},
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # pyproject's version, from the package metadata
        from adapt.version import __version__

        return __version__
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'adapt' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "AdaptError", "BaseEnvironment", "Budget", "BudgetError", "CancelledByUser", "ChatModel",
    "ChatRequest", "ChatResponse", "Environment", "Episode", "EpisodeExecutor", "Event",
    "ExecuteOptions", "ExecutionResult", "ExecutorConfig", "FanoutSink", "LLMCall", "MemorySink",
    "Node", "NodeRunner", "NullSink", "PlannerConfig", "ResolvedConfig", "RunConfig", "Step",
    "StepResult", "TaskResult", "TreeSink", "Turn", "UserError", "WrapperModel",
    "available_executors", "available_strategies", "register_executor", "register_strategy",
    "resolve_config", "run_task",
]
