"""The chaos suite: real worker processes, a private PostgreSQL and Redis, the simulator's HTTP
server logging every paid request (and, for the environment server's restart, ``adapt env
serve textcraft`` as the workers' remote TextCraft, counting every change it applies); one
fault per test. Each asserts that every task reaches the
status and tree of an uninterrupted run, event sequences have no gaps, no worker exits, and no
more calls are paid twice than were in flight at the fault.

The short versions run on every CI run; the full-size experiments of issue 15 are ``slow``
(``python -m tests.chaos.bench`` prints their figures; so does the suite, into the file
``ADAPT_CHAOS_FIGURES`` names)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.chaos.infra import PrivatePostgres, PrivateRedis
from tests.chaos.scenarios import (
    SCENARIOS,
    SHORT,
    Figures,
    Scenario,
    replayed_changes,
    stack,
)


async def run_checked(scenario: Scenario, name: str,
                      servers: tuple[PrivatePostgres, PrivateRedis], log_dir: Path) -> Figures:
    pg, redis = servers
    async with stack(pg, redis, log_dir, **scenario.stack) as st:
        fig = await scenario.run(st, name)
        logs = st.workers.logs()
        if st.env_server is not None:  # the restart hit tasks that had stepped: replayed
            assert sum(replayed_changes(st.workers.full_logs())) > 0, logs
    figures = os.environ.get("ADAPT_CHAOS_FIGURES")  # a file to append the figures to
    if figures:
        with open(figures, "a") as out:
            print(fig.line(), file=out)
    assert not fig.problems, "\n".join([fig.line(), *fig.problems[:10], logs])
    assert fig.completed == fig.tasks, fig.line()
    assert fig.worker_exits == [], fig.line() + "\n" + logs
    assert fig.repaid <= scenario.repaid_bound, fig.line()
    return fig


@pytest.mark.parametrize("name", list(SHORT))
async def test_chaos_short(name: str, private_servers: tuple[PrivatePostgres, PrivateRedis],
                           chaos_dir: Path) -> None:
    await run_checked(SHORT[name], name, private_servers, chaos_dir)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["db-drop-once", "db-restart", "duplicates", "zombie"])
async def test_chaos_full(name: str, private_servers: tuple[PrivatePostgres, PrivateRedis],
                          chaos_dir: Path) -> None:
    await run_checked(SCENARIOS[name], name, private_servers, chaos_dir)
