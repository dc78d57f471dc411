"""The throughput bench's workloads (``--workload tools|mcp``): at a tiny size each runs the
tasks it names (the environment, the tools executor, every executor call answered with a tool
call, read back from the bench's database) and they succeed; the output names the workload;
the mcp workload stops at once, saying what is missing, without the server."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from adapt.llm.base import Message
from adapt.store.db import create_engine, session_factory
from adapt.store.models import LLMCallRow, NodeRow, StepRow, Task
from benchmarks.perfkit import scratch_database
from benchmarks.throughput import mcp_standin
from benchmarks.throughput.__main__ import main, run
from benchmarks.throughput.measure import format_table
from tests.support.mcp_servers import missing


def rows_of(text: str) -> dict[str, str]:
    return dict(re.split(r"\s{2,}", line, maxsplit=1) for line in text.splitlines()
                if re.search(r"\S\s{2,}\S", line))


def recorded(url: str) -> dict[str, Any]:
    """What the bench's tasks were, from its database (the warm-up's included)."""
    async def read() -> dict[str, Any]:
        engine = create_engine(url)
        try:
            async with session_factory(engine)() as session:
                tasks = list((await session.execute(select(Task))).scalars())
                calls = list((await session.execute(
                    select(LLMCallRow).where(LLMCallRow.role == "executor"))).scalars())
                steps = list((await session.execute(select(StepRow))).scalars())
                nodes = list((await session.execute(select(NodeRow).where(NodeRow.id == 1))).scalars())
        finally:
            await engine.dispose()
        return {"environments": {t.environment for t in tasks},
                "executors": {(t.run_config or {}).get("executor", {}).get("kind")
                              for t in tasks},
                "calls": len(calls),
                "tool_call_answers": sum(bool((c.response or {}).get("tool_calls"))
                                         for c in calls),
                "tools": {(s.extra or {}).get("tool", {}).get("name") for s in steps},
                "verdicts": {n.verdict for n in nodes}}

    return asyncio.run(read())


def test_the_tools_workload_runs_textcraft_with_the_tools_executor(
        capsys: pytest.CaptureFixture[str]) -> None:
    with scratch_database("sqlite") as url:
        result = main(["--mode", "inprocess", "--tasks", "4", "--latency", "0.05",
                       "--workload", "tools", "--database-url", url])
        seen = recorded(url)
    assert result["workload"] == "tools" and result["tasks"] == 4
    assert result["succeeded"] == 4 and result["llm_calls"] > 4
    assert seen["environments"] == {"textcraft"} and seen["executors"] == {"tools"}
    # every executor call was a tools request answered with a tool call
    assert seen["calls"] > 0 and seen["tool_call_answers"] == seen["calls"]
    assert {"get", "craft"} <= seen["tools"]
    text = capsys.readouterr().out
    rows = rows_of(text)
    assert rows["workload"] == "tools" and "tool calls" in rows["tasks answered by"]
    assert "LLM calls/s while all run / ideal (tools workload):" in text
    assert "worker CPU per LLM call (tools workload):" in text


def test_the_default_workload_is_textcraft_with_the_text_executor() -> None:
    """What the workloads' test tells apart: the default's executor calls are no tools
    requests, and its output is as it was (no workload on the figures' lines)."""
    with scratch_database("sqlite") as url:
        result = run(tasks=2, latency=0.02, mode="inprocess", database_url=url)
        seen = recorded(url)
    assert result["workload"] == "textcraft" and result["succeeded"] == 2
    assert seen["executors"] == {"react"} and seen["tool_call_answers"] == 0
    text = format_table(result)
    assert rows_of(text)["workload"] == "textcraft"
    assert "LLM calls/s while all run / ideal: " in text and "workload)" not in text
    assert "child processes" not in text


@pytest.mark.slow  # about 20 s: a server process per task
def test_the_mcp_workload_runs_tasks_on_the_filesystem_server(
        capsys: pytest.CaptureFixture[str]) -> None:
    lacks = mcp_standin.missing()
    if lacks:
        missing("; ".join(lacks))
    with scratch_database("sqlite") as url:
        result = main(["--mode", "inprocess", "--tasks", "2", "--latency", "0.05",
                       "--workload", "mcp", "--database-url", url])
        seen = recorded(url)
    assert result["workload"] == "mcp" and result["tasks"] == 2 and result["succeeded"] == 2
    assert seen["environments"] == {"mcp"} and seen["executors"] == {"tools"}
    assert seen["calls"] > 0 and seen["tool_call_answers"] == seen["calls"]
    assert {"list_allowed_directories", "read_text_file", "write_file"} <= seen["tools"]
    assert seen["verdicts"] == {"confirmed"}  # the check read the file the calls wrote
    # 12 calls a task on desktop_template (8 files read)
    assert result["llm_calls"] == 2 * 12
    assert result["cpu_ms_per_call_children"] > 0  # the servers' and checks' CPU
    text = capsys.readouterr().out
    rows = rows_of(text)
    assert rows["workload"] == "mcp" and "scripted stand-in" in rows["tasks answered by"]
    assert "CPU per LLM call: the worker's child processes" in text
    assert "(mcp workload)" in text


@pytest.mark.slow  # about 30 s: a Celery worker process, a server process per task
def test_the_mcp_workload_in_a_worker_process_gets_the_registrations() -> None:
    """Worker mode: the registrations reach the worker process through its environment, and
    the servers are the worker's children (their CPU is counted)."""
    lacks = mcp_standin.missing()
    if lacks:
        missing("; ".join(lacks))
    result = run(tasks=2, latency=0.05, mode="worker", workload="mcp")
    assert result["workload"] == "mcp" and result["succeeded"] == 2
    assert result["llm_calls"] == 2 * 12 and result["cpu_ms_per_call_children"] > 0


def test_the_mcp_workload_stops_at_once_without_the_server(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADAPT_TEST_MCP_FILESYSTEM", str(tmp_path / "absent" / "index.js"))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"missing .*MCP filesystem server: npm install"):
        run(tasks=2, latency=0.05, mode="inprocess", workload="mcp")
    assert time.monotonic() - started < 5


def test_the_stand_in_follows_its_plan_and_gives_up_on_an_error() -> None:
    offered = {"list_allowed_directories", "list_directory", "read_text_file", "write_file",
               "task_completed", "task_failed"}

    def after(*results: str) -> tuple[str, dict[str, Any]]:
        return mcp_standin.next_call([Message(role="tool", content=r) for r in results],
                                     offered)

    assert after() == ("list_allowed_directories", {})
    assert after("Allowed directories:\n/w/x") == ("list_directory", {"path": "/w/x"})
    listing = "[DIR] Documents\n[FILE] a.txt\n[FILE] b.txt"
    assert after("Allowed directories:\n/w/x", listing) == (
        "read_text_file", {"path": "/w/x/a.txt"})
    assert after("Allowed directories:\n/w/x", listing, "1\n2\n", "x") == (
        "write_file", {"path": "/w/x/line_counts.txt", "content": "a.txt\t2\nb.txt\t1\n"})
    assert after("Allowed directories:\n/w/x", listing, "1", "x", "ok")[0] == "task_completed"
    assert after("Allowed directories:\n/w/x", "Error from list_directory: denied")[0] == (
        "task_failed")
    assert mcp_standin.next_call([], {"get", "craft"})[0] == "task_failed"


def test_a_database_the_bench_is_given_is_migrated_first(tmp_path: Path) -> None:
    """``--database-url`` naming a new SQLite file: the bench gives it the schema (it ended in
    "no such table: tasks") and leaves the tasks in it."""
    url = f"sqlite+aiosqlite:///{tmp_path}/new.db"
    result = run(tasks=2, latency=0.02, mode="inprocess", database_url=url)
    assert result["succeeded"] == 2
    assert recorded(url)["executors"] == {"react"}
