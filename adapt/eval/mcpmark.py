"""MCPMark's Filesystem tasks on the npm filesystem server: ``adapt bench mcpmark``.

The 6 tasks of ``../shared/data/mcpmark-filesystem`` that have an initial state, any model and
strategy, ``k`` runs each. Each run gets a fresh copy of the task's initial folder, the
filesystem server started on it (``@modelcontextprotocol/server-filesystem``, one process per
run, as MCPMark starts it) and, after the run, the task's own ``verify.py`` with
``FILESYSTEM_TEST_DIR`` set to the copy: its exit status alone decides success, as in MCPMark.
The prompt is MCPMark's: the task's ``description.md`` with MCPMark's note appended, and its
agent's instructions at the head of the executor prompt (prompt set ``mcpmark``).

Per task: pass@1 (the mean over the k runs), pass^k (solved in all k), tool calls, tokens and
cost per run; MCPMark's published figures beside them (``manifest.json``: runs passed of all
published runs, over 39 models, and gpt-5-medium's of 4; the README's table: the model's
pass@1 over the 30 standard tasks, when the model is one of those published).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.events import Event, StepAppended
from adapt.engine.runtime import PriceFn
from adapt.engine.tree import UsageTotals
from adapt.envs.mcp import MCPEnvironment, MCPSettings
from adapt.errors import UserError
from adapt.eval.grid import (
    BenchModel,
    Cell,
    ModelInfo,
    check_concurrency,
    make_cells,
    parse_d_max,
    parse_strategies,
    rate,
    result_fields,
    run_grid,
    strategies_as_designs,
    synchronous,
    usage_sums,
)
from adapt.eval.report import _cost, _num, _pct, markdown_table, write_outputs

#: MCPMark's note appended to every task description (its input text, quoted)
NOTE = ("\n\nNote: Based on your understanding, solve the task all at once by yourself, "
        "don't ask for my opinions on anything.")
#: the npm package and the version tests and CI pin
FILESYSTEM_PACKAGE = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_VERSION = "2026.8.31"
INSTALLED = (Path.home() / ".cache" / "adapt-ci" / "node" / "node_modules" / FILESYSTEM_PACKAGE
             / "dist" / "index.js")


@dataclass(frozen=True)
class MCPMarkTask:
    task_id: str
    category: str
    path: Path
    initial_state: Path
    description: str
    published_passed: int
    published_total: int
    published_gpt5_medium: int | None

    @property
    def prompt(self) -> str:
        return self.description + NOTE


def default_data_dir() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mcpmark-filesystem"


def load_tasks(data: Path) -> list[MCPMarkTask]:
    """The runnable tasks (those with an initial state), in manifest order."""
    manifest = data / "manifest.json"
    if not manifest.is_file():
        raise UserError(f"no MCPMark data at {data} (manifest.json missing): give the folder "
                        "../shared/data/mcpmark-filesystem")
    out = []
    for t in json.loads(manifest.read_text(encoding="utf-8"))["tasks"]:
        if not t.get("initial_state"):
            continue
        out.append(MCPMarkTask(
            t["task_id"], t["category_id"], data / t["path"], data / t["initial_state"],
            (data / t["path"] / "description.md").read_text(encoding="utf-8"),
            int(t.get("published_runs_passed") or 0), int(t.get("published_runs_total") or 0),
            t.get("published_gpt_5_medium_passed_of_4")))
    return out


def server_command(given: str | None = None) -> list[str]:
    """How the filesystem server is started: ``given`` (split on spaces), the copy ``.ci/run``
    installs, or ``npx`` with the pinned version."""
    if given:
        return given.split()
    if INSTALLED.is_file():
        return ["node", str(INSTALLED)]
    if shutil.which("npx") is None:
        raise UserError("the MCPMark bench needs Node.js (npx) or --server-command")
    return ["npx", "-y", f"{FILESYSTEM_PACKAGE}@{FILESYSTEM_VERSION}"]


def registrations(tasks: Sequence[MCPMarkTask], server: Sequence[str],
                  work_dir: Path | None = None) -> MCPSettings:
    """The filesystem server, one workspace per initial state, one check per task."""
    return MCPSettings(
        servers={"filesystem": {"command": server[0], "args": [*server[1:], "{workspace}"],
                                "env": {k: os.environ[k] for k in ("npm_config_cache",)
                                        if k in os.environ}}},
        workspaces={t.category: t.initial_state for t in tasks},
        checks={t.task_id: {"command": [sys.executable, str(t.path / "verify.py")],
                            "env": {"FILESYSTEM_TEST_DIR": "{workspace}"}} for t in tasks},
        work_dir=work_dir)


# -- records ------------------------------------------------------------------------------------
class MCPMarkRecord(BaseModel):
    """One run of one task: a line of ``tasks.jsonl``."""

    task_id: str
    run: int
    strategy: str
    model: str
    status: str
    solved: bool
    tool_calls: int
    usage: UsageTotals
    wall_seconds: float
    reward: float | None = None
    evidence: str | None = None
    error: str | None = None


class TaskStats(BaseModel):
    task_id: str
    runs: int
    pass_at_1: float
    pass_hat_k: bool
    mean_tool_calls: float
    tokens_per_run: float
    cost_per_run: float | None
    published_passed: int
    published_total: int
    published_gpt5_medium: int | None


class MCPMarkEntry(BaseModel):
    strategy: str
    model: str
    simulated: bool
    pass_at_1: float
    pass_hat_k: float
    tasks: list[TaskStats]
    usage: dict[str, Any]
    #: MCPMark's published pass@1 for this model over the 30 standard tasks (None: not there)
    published_pass_at_1: str | None = None


class MCPMarkReport(BaseModel):
    environment: str = "mcp"
    benchmark: str = "MCPMark Filesystem (the 6 tasks with an initial state)"
    data: str
    k: int
    d_max: int
    concurrency: int
    models: list[ModelInfo]
    strategies: list[str]
    elapsed_seconds: float
    entries: list[MCPMarkEntry]
    results: list[MCPMarkRecord] = Field(default_factory=list, exclude=True)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"


class _ToolCalls(MemorySink):
    def __init__(self) -> None:
        super().__init__()
        self.tool_calls = 0

    async def emit(self, event: Event) -> None:
        await super().emit(event)
        if isinstance(event, StepAppended) and event.step.text.lstrip().startswith("tool"):
            self.tool_calls += 1


def published_table(data: Path) -> dict[str, str]:
    """MCPMark's published pass@1 per model (the README's table), by model name."""
    readme = data / "README.md"
    out: dict[str, str] = {}
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and re.match(r"^\d+(\.\d+)?% ", cells[2]):
                out[cells[0]] = cells[2]
    return out


def published_for(label: str, table: dict[str, str]) -> str | None:
    """The published pass@1 of the model named in ``label`` (``gpt-5`` spelled ``gpt-5``...)."""
    name = re.sub(r"[^a-z0-9]+", "-", label.lower().split(":")[-1].split("@")[0]).strip("-")
    return table.get(name)


async def _run_one(settings: MCPSettings, price: PriceFn | None,
                   cell: Cell, job: tuple[MCPMarkTask, int]) -> MCPMarkRecord:
    task, run = job
    env = MCPEnvironment(settings=settings)
    sink = _ToolCalls()
    config = {"server": "filesystem", "workspace": task.category, "check": task.task_id,
              "task": task.prompt, "prompts": "mcpmark"}
    try:
        result = await run_task(env, config, cell.config, cell.model.executors,
                                cell.model.planner, sink=sink, price=price)
        verdict = env.verify(env.goal)
    finally:
        env.close()
    fields = result_fields(result)
    return MCPMarkRecord(task_id=task.task_id, run=run, strategy=cell.strategy,
                         model=cell.model.label, solved=verdict.verdict == "confirmed",
                         tool_calls=sink.tool_calls, evidence=verdict.evidence or None, **fields)


def _entry(cell: Cell, records: list[MCPMarkRecord], tasks: Sequence[MCPMarkTask], k: int,
           table: dict[str, str]) -> MCPMarkEntry:
    stats = []
    for t in tasks:
        mine = [r for r in records if r.task_id == t.task_id]
        sums = usage_sums(mine)
        stats.append(TaskStats(
            task_id=t.task_id, runs=len(mine), pass_at_1=rate(sum(r.solved for r in mine),
                                                              len(mine)),
            pass_hat_k=bool(mine) and all(r.solved for r in mine),
            mean_tool_calls=rate(sum(r.tool_calls for r in mine), len(mine)),
            tokens_per_run=rate(sums["prompt_tokens"] + sums["completion_tokens"], len(mine)),
            cost_per_run=None if sums["cost_usd"] is None else rate(sums["cost_usd"], len(mine)),
            published_passed=t.published_passed, published_total=t.published_total,
            published_gpt5_medium=t.published_gpt5_medium))
    return MCPMarkEntry(
        strategy=cell.strategy, model=cell.model.label, simulated=cell.model.simulated,
        pass_at_1=rate(sum(s.pass_at_1 for s in stats), len(stats)),
        pass_hat_k=rate(sum(s.pass_hat_k for s in stats), len(stats)), tasks=stats,
        usage=usage_sums(records), published_pass_at_1=published_for(cell.model.label, table))


async def run_mcpmark_bench_async(
    data: Path, *, models: Sequence[BenchModel], strategies: str | Sequence[str] = "react",
    k: int = 1, d_max: int = 3, concurrency: int = 2, server: Sequence[str] | None = None,
    task_ids: Sequence[str] | None = None, price: PriceFn | None = None,
    max_steps: int = 100, on_result: Callable[[MCPMarkRecord], None] | None = None,
    work_dir: Path | None = None,
) -> MCPMarkReport:
    """Every (model, strategy) on the runnable tasks, ``k`` runs each."""
    if k < 1:
        raise UserError(f"--k must be at least 1, got {k}")
    tasks = load_tasks(data)
    if task_ids:
        unknown = sorted(set(task_ids) - {t.task_id for t in tasks})
        if unknown:
            raise UserError(f"unknown task(s) {', '.join(unknown)}; the runnable ones: "
                            f"{', '.join(t.task_id for t in tasks)}")
        tasks = [t for t in tasks if t.task_id in task_ids]
    settings = registrations(tasks, server or server_command(), work_dir)
    names = parse_strategies(strategies)
    (depth,) = parse_d_max(d_max)
    # MCPMark's agent stops at 100 turns
    base = RunConfig.model_validate({"executor": {"max_steps": max_steps}})
    cells = make_cells(models, ["default"], strategies_as_designs(names), [depth], ["react"],
                       env=MCPEnvironment, base_config=base)
    jobs = [(t, run) for t in tasks for run in range(1, k + 1)]
    ran = await run_grid(cells, jobs, partial(_run_one, settings, price),
                         concurrency=check_concurrency(concurrency), on_result=on_result)
    table = published_table(data)
    entries = [_entry(c, chunk, tasks, k, table)
               for c, chunk in zip(cells, ran.chunks(), strict=True)]
    return MCPMarkReport(data=str(data), k=k, d_max=depth, concurrency=concurrency,
                         models=[m.info() for m in models], strategies=names,
                         elapsed_seconds=ran.elapsed_seconds, entries=entries,
                         results=ran.records)


run_mcpmark_bench = synchronous(run_mcpmark_bench_async)


def rows(report: MCPMarkReport) -> tuple[list[str], list[list[str]]]:
    headers = ["strategy", "model", "task", "pass@1", f"pass^{report.k}", "tool calls",
               "tokens/run", "cost/run", "MCPMark: runs passed (39 models)",
               "MCPMark: gpt-5-medium"]
    out = []
    for e in report.entries:
        model = e.model + (" (SIMULATED)" if e.simulated else "")
        for s in e.tasks:
            gpt5 = "–" if s.published_gpt5_medium is None else f"{s.published_gpt5_medium}/4"
            out.append([e.strategy, model, s.task_id, _pct(s.pass_at_1),
                        "yes" if s.pass_hat_k else "no", f"{s.mean_tool_calls:.1f}",
                        _num(round(s.tokens_per_run)), _cost(s.cost_per_run, False),
                        f"{s.published_passed}/{s.published_total}", gpt5])
        out.append([e.strategy, model, "all", _pct(e.pass_at_1), _pct(e.pass_hat_k), "", "",
                    "", "", f"pass@1 {e.published_pass_at_1} (30 tasks)"
                    if e.published_pass_at_1 else "model not published"])
    return headers, out


def notes(report: MCPMarkReport) -> list[str]:
    return [f"{report.k} run(s) per task; success = the task's verify.py exits 0 (MCPMark's "
            "rule); pass@1 = mean over the runs, pass^k = solved in every run; tool calls, "
            f"tokens and cost per run (elapsed {report.elapsed_seconds:.1f} s)",
            "MCPMark's figures: eval-sys/mcpmark-experiments (39 models x 4 runs on the 30 "
            "standard tasks; the 'all' row's is over those 30 tasks, not these 6)"]


def to_markdown(report: MCPMarkReport) -> str:
    headers, body = rows(report)
    return markdown_table(f"MCPMark Filesystem, 6 runnable tasks, k={report.k}", headers, body,
                          notes(report), left=("strategy", "model", "task"))


def write_report(report: MCPMarkReport, out_dir: Path) -> list[Path]:
    return write_outputs(out_dir, report_json=report.to_json(), markdown=to_markdown(report),
                         records=report.results)
