"""Runs of the tools executor with scripted tool calls, shared by the environments' tests: the
tools executor over any environment that declares tools (the built-ins' conformance with
it), and the checks that each call became the text action the environment names."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.tree import TaskResult
from adapt.envs.base import Environment
from adapt.envs.tools import declared_tools, sample_arguments
from adapt.llm.base import ToolCall
from adapt.llm.testing import Answer, ScriptedModel, tool_call


def every_tool(env: Environment, config: Mapping[str, Any]) -> list[ToolCall]:
    """One call of each tool ``env`` declares for ``config`` (its example arguments)."""
    env.reset(**config)
    return [tool_call(t.name, sample_arguments(t.parameters))
            for t in declared_tools(env) or ()]


async def run_tools(env: Environment, config: Mapping[str, Any], replies: Sequence[Answer], *,
                    strategy: str = "react", **executor: Any
                    ) -> tuple[TaskResult, MemorySink, ScriptedModel]:
    """``env`` run by the tools executor on ``config`` with a model scripted by ``replies``."""
    model = ScriptedModel(list(replies))
    sink = MemorySink()
    rc = RunConfig(strategy=strategy, d_max=1,
                   executor={"kind": "tools", "max_steps": len(replies), **executor})
    result = await run_task(env, dict(config), rc, model, sink=sink)
    return result, sink, model


def check_calls_became_actions(make: Callable[[], Environment], config: Mapping[str, Any],
                               sink: MemorySink) -> None:
    """Every tool-call step of ``sink`` holds the text action ``tool_action`` names for it,
    and those actions, taken in order on a fresh environment, answer what the steps saw."""
    fresh = make()
    try:
        fresh.reset(**config)
        for step in (s for steps in sink.steps.values() for s in steps):
            called = (step.extra or {}).get("tool")
            assert called is not None, f"step {step.index} is not a tool call"
            if step.error is not None or step.kind == "thought":
                continue
            assert step.text == fresh.tool_action(  # type: ignore[attr-defined]
                called["name"], called["arguments"])
            assert fresh.step(step.text).observation == step.observation
    finally:
        fresh.close()
