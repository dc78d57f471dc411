"""InterCode-Bash through the tools executor in the real sandbox: every tool runs, a command
and submit solve a task, and each call is the text action the environment names."""

from __future__ import annotations

from typing import Any

from adapt.envs.intercode_bash import InterCodeBash
from adapt.llm.testing import tool_call
from tests.envs.intercode_bash.test_bash_agents import GOLD_CMD, TASK
from tests.support.toolruns import check_calls_became_actions, every_tool, run_tools


async def test_every_tool_runs_and_a_task_is_solved_with_tools(
        bash_data: Any, bash_cache: Any, bash_layers: Any) -> None:
    def make() -> InterCodeBash:
        return InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10)

    calls = every_tool(make(), TASK)
    assert [c.name for c in calls] == ["execute", "submit"]
    result, sink, _ = await run_tools(make(), TASK, calls)
    assert result.error is None and sink.steps[1][0].text == "execute[pwd]"
    check_calls_became_actions(make, TASK, sink)

    result, sink, _ = await run_tools(make(), TASK, [
        tool_call("execute", {"command": GOLD_CMD}), tool_call("submit")])
    assert result.status == "succeeded" and result.reward == 1.0
