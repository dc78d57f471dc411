"""``adapt bench mcpmark`` on the real filesystem server with scripted models (our own
solutions): pass@1, pass^k, tool calls per task, MCPMark's published figures beside, and the
JSON/Markdown report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapt.eval.grid import BenchModel
from adapt.eval.mcpmark import (
    NOTE,
    load_tasks,
    run_mcpmark_bench_async,
    server_command,
    write_report,
)
from adapt.llm.testing import FunctionModel
from tests.support.mcp_servers import filesystem_spec, require_mcpmark
from tests.support.mcpmark_solutions import by_task

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow


async def test_the_bench_scores_runs_with_the_tasks_own_checks(tmp_path: Path) -> None:
    data = require_mcpmark()
    spec = filesystem_spec()
    server = [spec["command"], *spec["args"][:-1]]
    solver = FunctionModel(by_task(wrong=False), name="gpt-5-medium")
    wrong = FunctionModel(by_task(wrong=True), name="scripted-wrong")
    report = await run_mcpmark_bench_async(
        data, models=[BenchModel(solver, solver), BenchModel(wrong, wrong)], k=2,
        server=server, task_ids=["code_locating", "contact_information"], concurrency=2,
        work_dir=tmp_path / "episodes")
    good, bad = report.entries
    assert good.pass_at_1 == 1.0 and good.pass_hat_k == 1.0
    assert bad.pass_at_1 == 0.0 and bad.pass_hat_k == 0.0
    locating = next(s for s in good.tasks if s.task_id == "code_locating")
    assert locating.runs == 2 and locating.mean_tool_calls == 3  # list, search, write
    assert (locating.published_passed, locating.published_total) == (135, 153)
    assert good.published_pass_at_1 == "57.5% ± 3.6%" and bad.published_pass_at_1 is None
    # MCPMark's prompt: the description and its note, the agent's instructions first
    prompt = solver.requests[0].as_prompt()
    assert NOTE.strip() in prompt and prompt.startswith("You are a helpful agent")
    paths = write_report(report, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "135/153" in md and "pass@1 57.5% ± 3.6% (30 tasks)" in md
    assert json.loads((tmp_path / "out" / "report.json").read_text())["k"] == 2
    assert len((tmp_path / "out" / "tasks.jsonl").read_text().splitlines()) == 8
    assert len(paths) == 3 and list((tmp_path / "episodes").iterdir()) == []


def test_the_runnable_tasks_and_the_server() -> None:
    tasks = load_tasks(require_mcpmark())
    assert [t.task_id for t in tasks] == ["budget_computation", "contact_information",
                                          "file_arrangement", "code_locating",
                                          "output_analysis", "requirements_completion"]
    assert server_command("node /x/index.js") == ["node", "/x/index.js"]
