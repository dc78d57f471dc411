"""InterCode-SQL through the tools executor on the real MariaDB: every tool runs, a query and
submit solve a task, and each call is the text action the environment names."""

from __future__ import annotations

from adapt.llm.testing import tool_call
from tests.envs.intercode_sql.test_sql_env import POKER
from tests.support.sqldb import Server, make_env
from tests.support.toolruns import check_calls_became_actions, every_tool, run_tools


async def test_every_tool_runs_and_a_task_is_solved_with_tools(server: Server) -> None:
    calls = every_tool(make_env(server), POKER)
    assert [c.name for c in calls] == ["execute", "submit"]
    result, sink, _ = await run_tools(make_env(server), POKER, calls)
    assert result.error is None and sink.steps[1][0].text == "execute[SHOW TABLES]"
    check_calls_became_actions(lambda: make_env(server), POKER, sink)

    result, sink, _ = await run_tools(make_env(server), POKER, [
        tool_call("execute", {"query": POKER["gold"]}), tool_call("submit")])
    assert result.status == "succeeded" and result.reward == 1.0
    assert sink.steps[1][1].done
