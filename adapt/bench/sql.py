"""InterCode-SQL benchmark harness: agent designs x hardness levels on Spider questions.

Library entry point: :func:`run_sql_bench` (or :func:`run_sql_bench_async` inside an event loop).
CLI: ``adapt bench sql PATH``. There is no simulated SQL model: the bench needs a real
OpenAI-compatible endpoint (and MariaDB loaded with ``adapt data load-sql PATH``)::

    OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench sql ../shared/data/intercode-sql \\
        --hardness easy,medium,hard,extra --limit 40 --designs react,stateflow,plan_and_execute \\
        --model openai:gpt-4o-mini --concurrency 8 --out runs/sql
    adapt bench sql /data/intercode-sql --model 'openai:llama3@http://127.0.0.1:11434/v1'

Designs: ``react`` (strategy react, ReAct executor), ``stateflow`` (the standalone StateFlow
machine) and ``plan_and_execute`` (plan once, ReAct executor). Per design and hardness level the
report gives the success rate (reward == 1.0), mean reward, mean turns (environment actions per
task), the error rate (share of ``execute[...]`` actions whose observation is an
``Error executing query``), LLM calls, tokens and cost.

Each task run gets its own :class:`InterCodeSQL` (its own DB connection), closed afterwards; at
most ``concurrency`` run at once. The environment's steps are synchronous (bounded by the
statement timeout); the LLM calls of concurrent runs overlap.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from adapt.bench.report import (
    ModelInfo,
    _cost,
    _num,
    _pct,
    _rate,
    markdown_table,
    model_label,
    write_outputs,
)
from adapt.bench.textcraft import BenchModel, _items, parse_d_max, parse_names, parse_profiles
from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.profiles import apply_profile
from adapt.engine.runtime import PriceFn
from adapt.engine.tree import UsageTotals
from adapt.envs.intercode_sql import InterCodeSQL
from adapt.envs.intercode_sql.env import _EXECUTE, ERROR_PREFIX
from adapt.envs.intercode_sql.tasks import HARDNESS, Task, tasks
from adapt.errors import InvalidConfig, UserError

#: design name -> (strategy, executor kind)
DESIGNS: dict[str, tuple[str, str]] = {
    "react": ("react", "react"),
    "stateflow": ("stateflow", "react"),  # the strategy runs its machine whatever the kind
    "plan_and_execute": ("plan_and_execute", "react"),
}
DEFAULT_DESIGNS = ("react", "stateflow", "plan_and_execute")
DEFAULT_D_MAX = 3

#: the command documented for a real endpoint (shown when no model is available)
REAL_MODEL_COMMAND = (
    "OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench sql PATH "
    "--model openai:gpt-4o-mini --limit 40 --out runs/sql"
)
REAL_MODEL_REQUIRED = (
    "the SQL bench needs a real OpenAI-compatible endpoint (there is no simulated SQL model): "
    "set OPENAI_API_KEY or pass --model, e.g. "
    f"`{REAL_MODEL_COMMAND}` or --model 'openai:llama3@http://127.0.0.1:11434/v1'"
)

EnvFactory = Callable[[], InterCodeSQL]
ResultCallback = Callable[["SQLTaskRecord"], None]


class SQLTaskRecord(BaseModel):
    """One task run: a line of ``tasks.jsonl``."""

    id: str
    db: str
    hardness: str
    design: str
    #: ``default`` or ``paper`` (the published protocols)
    profile: str = "default"
    model: str
    d_max: int
    status: str
    reward: float
    turns: int
    executes: int
    execute_errors: int
    usage: UsageTotals
    wall_seconds: float
    error: str | None = None

    @property
    def solved(self) -> bool:
        return self.reward == 1.0


class LevelStats(BaseModel):
    tasks: int
    successes: int
    success_rate: float
    mean_reward: float
    mean_turns: float
    executes: int
    execute_errors: int
    #: share of execute[...] actions that failed (0 when none ran)
    error_rate: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


class SQLBenchEntry(LevelStats):
    """Aggregates for one (design, model, d_max): overall and per hardness level."""

    design: str
    profile: str = "default"
    strategy: str
    executor: str
    model: str
    simulated: bool
    d_max: int
    by_hardness: dict[str, LevelStats]
    statuses: dict[str, int]
    errors: int
    wall_seconds: float


class SQLBenchReport(BaseModel):
    environment: str = "intercode_sql"
    data: str
    hardness: list[str]
    db: str | None = None
    limit: int | None = None
    concurrency: int
    designs: list[str]
    profiles: list[str] = Field(default_factory=lambda: ["default"])
    d_max: int
    models: list[ModelInfo]
    task_count: int
    tasks_by_hardness: dict[str, int]
    elapsed_seconds: float
    entries: list[SQLBenchEntry]
    results: list[SQLTaskRecord] = Field(default_factory=list, exclude=True)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"


# -- argument parsing -----------------------------------------------------------------------
def parse_designs(value: str | Sequence[str]) -> list[str]:
    """``"react,stateflow"`` -> ``["react", "stateflow"]``; unknown names raise."""
    return parse_names(value, list(DESIGNS), option="--designs", example="react,stateflow",
                       noun=("design", "designs"), listed_as="known")


def parse_hardness(value: str | Sequence[str] | None) -> list[str]:
    """``"easy,hard"`` -> ``["easy", "hard"]`` in Spider's order; ``None``: all four."""
    if value is None:
        return list(HARDNESS)
    names = _items(value)
    unknown = [n for n in names if n not in HARDNESS]
    if not names or unknown or any(not n for n in names):
        raise InvalidConfig(f"--hardness: give comma-separated levels among "
                            f"{', '.join(HARDNESS)} (got {value!r})")
    return [h for h in HARDNESS if h in names]


def select_sql_tasks(path: str | Path, hardness: str | Sequence[str] | None = None,
                     db: str | None = None, limit: int | None = None) -> list[Task]:
    """The tasks at ``path`` of the given levels (and database); ``limit`` takes the levels in
    turn (file order within a level), so a small limit still covers every level."""
    levels = parse_hardness(hardness)
    if limit is not None and limit < 1:
        raise InvalidConfig(f"--limit must be at least 1, got {limit}")
    groups = {h: [t for t in tasks(path, db=db) if t.hardness == h] for h in levels}
    groups = {h: g for h, g in groups.items() if g}
    if not groups:
        where = f" of database {db!r}" if db else ""
        raise InvalidConfig(f"no InterCode-SQL tasks{where} at levels {', '.join(levels)}")
    total = sum(len(g) for g in groups.values())
    if limit is None or limit >= total:
        return [t for g in groups.values() for t in g]
    quota = dict.fromkeys(groups, 0)
    left = limit
    while left:
        for h, g in groups.items():
            if left and quota[h] < len(g):
                quota[h] += 1
                left -= 1
    return [t for h, g in groups.items() for t in g[: quota[h]]]


def require_model_spec(spec: str | None) -> str:
    """``spec`` when it names a real model; the simulators cannot answer SQL questions."""
    from adapt.llm.spec import is_simulated

    if not spec or is_simulated(spec):
        raise UserError(REAL_MODEL_REQUIRED)
    return spec


# -- running ----------------------------------------------------------------------------------
def count_actions(sink: MemorySink) -> tuple[int, int, int]:
    """(environment actions, ``execute[...]`` actions, those that failed) of one run."""
    turns = executes = failed = 0
    for steps in sink.steps.values():
        for step in steps:
            if step.kind != "action":
                continue
            turns += 1
            if _EXECUTE.fullmatch(step.text.strip()):
                executes += 1
                failed += step.observation.startswith(ERROR_PREFIX)
    return turns, executes, failed


@dataclass(frozen=True)
class _Job:
    model: BenchModel
    design: str
    task: Task
    profile: str = "default"


async def _run_one(job: _Job, config: RunConfig, d_max: int, env_factory: EnvFactory,
                   price: PriceFn | None, env_extra: dict[str, Any]) -> SQLTaskRecord:
    sink = MemorySink()
    env = env_factory()
    try:
        result = await run_task(env, {**env_extra, **job.task.config}, config,
                                job.model.executor, job.model.planner, sink=sink, price=price)
    finally:
        env.close()
    turns, executes, failed = count_actions(sink)
    return SQLTaskRecord(
        id=job.task.id, db=job.task.db, hardness=job.task.hardness, design=job.design,
        profile=job.profile, model=job.model.label, d_max=d_max, status=result.status, reward=result.reward,
        turns=turns, executes=executes, execute_errors=failed, usage=result.usage,
        wall_seconds=result.wall_seconds, error=result.error,
    )


def _level(records: Sequence[SQLTaskRecord]) -> LevelStats:
    n = len(records)
    executes = sum(r.executes for r in records)
    failed = sum(r.execute_errors for r in records)
    cost: float | None = 0.0
    for r in records:
        cost = None if cost is None or r.usage.cost_usd is None else cost + r.usage.cost_usd
    return LevelStats(
        tasks=n,
        successes=sum(r.solved for r in records),
        success_rate=_rate(sum(r.solved for r in records), n),
        mean_reward=sum(r.reward for r in records) / n if n else 0.0,
        mean_turns=sum(r.turns for r in records) / n if n else 0.0,
        executes=executes,
        execute_errors=failed,
        error_rate=_rate(failed, executes),
        llm_calls=sum(r.usage.llm_calls for r in records),
        prompt_tokens=sum(r.usage.prompt_tokens for r in records),
        completion_tokens=sum(r.usage.completion_tokens for r in records),
        cost_usd=cost,
    )


def aggregate_sql(records: Sequence[SQLTaskRecord], *, design: str, model: ModelInfo,
                  d_max: int, profile: str = "default") -> SQLBenchEntry:
    strategy, kind = DESIGNS[design]
    levels = [h for h in HARDNESS if any(r.hardness == h for r in records)]
    return SQLBenchEntry(
        **_level(records).model_dump(),
        design=design, profile=profile, strategy=strategy, executor=kind, model=model.label,
        simulated=model.simulated, d_max=d_max,
        by_hardness={h: _level([r for r in records if r.hardness == h]) for h in levels},
        statuses=dict(sorted(Counter(r.status for r in records).items())),
        errors=sum(r.status == "error" for r in records),
        wall_seconds=sum(r.wall_seconds for r in records),
    )


async def run_sql_bench_async(
    path: str | Path,
    *,
    models: Sequence[BenchModel] | BenchModel,
    hardness: str | Sequence[str] | None = None,
    db: str | None = None,
    limit: int | None = None,
    designs: str | Sequence[str] = DEFAULT_DESIGNS,
    d_max: int = DEFAULT_D_MAX,
    concurrency: int = 8,
    base_config: RunConfig | None = None,
    price: PriceFn | None = None,
    env_factory: EnvFactory | None = None,
    task_list: Sequence[Task] | None = None,
    on_result: ResultCallback | None = None,
    profiles: str | Sequence[str] = "default",
) -> SQLBenchReport:
    """Run every (model, profile, design, task) and aggregate; see :func:`run_sql_bench`."""
    names = parse_designs(designs)
    profile_names = parse_profiles(profiles)
    (depth,) = parse_d_max(d_max)
    bench_models = [models] if isinstance(models, BenchModel) else list(models)
    if not bench_models:
        raise UserError(REAL_MODEL_REQUIRED)
    if concurrency < 1:
        raise InvalidConfig(f"--concurrency must be at least 1, got {concurrency}")
    selected = (list(task_list) if task_list is not None
                else select_sql_tasks(path, hardness, db, limit))
    if not selected:
        raise InvalidConfig("no tasks selected")
    factory: EnvFactory = env_factory or InterCodeSQL
    base = base_config or RunConfig()
    configs: dict[tuple[str, str], RunConfig] = {}
    env_extras: dict[str, dict[str, Any]] = {}
    base_data = base.model_dump(exclude_unset=True)
    for p in profile_names:
        for name in names:
            chosen = RunConfig.model_validate(
                {**base_data, "profile": p, "strategy": DESIGNS[name][0], "d_max": depth,
                 "executor": {**base_data.get("executor", {}), "kind": DESIGNS[name][1]}})
            configs[p, name], env_extras[p] = apply_profile(chosen, InterCodeSQL)
    jobs = [_Job(m, d, t, p) for m in bench_models for p in profile_names for d in names
            for t in selected]
    gate = asyncio.Semaphore(concurrency)

    async def run(job: _Job) -> SQLTaskRecord:
        async with gate:
            record = await _run_one(job, configs[job.profile, job.design], depth, factory,
                                    price, env_extras[job.profile])
        if on_result is not None:
            on_result(record)
        return record

    started = time.monotonic()
    records = list(await asyncio.gather(*(run(j) for j in jobs)))
    elapsed = time.monotonic() - started

    entries: list[SQLBenchEntry] = []
    combos = [(m, p, d) for m in bench_models for p in profile_names for d in names]
    for i, (m, p, d) in enumerate(combos):
        chunk = records[i * len(selected) : (i + 1) * len(selected)]
        entries.append(aggregate_sql(chunk, design=d, model=m.info(), d_max=depth, profile=p))
    counts = Counter(t.hardness for t in selected)
    levels = parse_hardness(hardness)
    return SQLBenchReport(
        data=str(path), hardness=levels, db=db, limit=limit, concurrency=concurrency,
        designs=names, profiles=profile_names, d_max=depth,
        models=[m.info() for m in bench_models],
        task_count=len(selected),
        tasks_by_hardness={h: counts[h] for h in HARDNESS if counts[h]},
        elapsed_seconds=elapsed, entries=entries, results=records,
    )


def run_sql_bench(
    path: str | Path,
    *,
    models: Sequence[BenchModel] | BenchModel,
    hardness: str | Sequence[str] | None = None,
    db: str | None = None,
    limit: int | None = None,
    designs: str | Sequence[str] = DEFAULT_DESIGNS,
    d_max: int = DEFAULT_D_MAX,
    concurrency: int = 8,
    base_config: RunConfig | None = None,
    price: PriceFn | None = None,
    env_factory: EnvFactory | None = None,
    task_list: Sequence[Task] | None = None,
    on_result: ResultCallback | None = None,
    profiles: str | Sequence[str] = "default",
) -> SQLBenchReport:
    """Benchmark ``designs`` x ``models`` x ``profiles`` (``default``, ``paper``) on the InterCode-SQL tasks at ``path``.

    ``hardness`` (``"easy,medium"``; default all), ``db`` and ``limit`` select the tasks
    (``task_list`` overrides them). ``env_factory`` makes one environment per task run
    (default ``InterCodeSQL()``, connecting with the ``ADAPT_SQL_*`` settings). Simulated
    models are refused. Raises :class:`~adapt.errors.UserError` on bad arguments before
    anything runs.
    """
    return asyncio.run(run_sql_bench_async(
        path, models=models, hardness=hardness, db=db, limit=limit, designs=designs,
        d_max=d_max, concurrency=concurrency, base_config=base_config, price=price,
        env_factory=env_factory, task_list=task_list, on_result=on_result, profiles=profiles,
    ))


# -- rendering --------------------------------------------------------------------------------
def _level_cells(s: LevelStats) -> list[str]:
    return [f"{_pct(s.success_rate)} ({s.successes}/{s.tasks})", f"{s.mean_reward:.3f}",
            f"{s.mean_turns:.2f}", f"{_pct(s.error_rate)} ({s.execute_errors}/{s.executes})",
            str(s.llm_calls), f"{_num(s.prompt_tokens)}/{_num(s.completion_tokens)}",
            _cost(s.cost_usd, False)]


def sql_table_rows(report: SQLBenchReport) -> tuple[list[str], list[list[str]]]:
    """One row per (design, model, level), the level ``all`` last for each."""
    several = len(report.models) > 1
    headers = ["design", "profile", *(["model"] if several else []), "hardness", "success",
               "mean reward",
               "mean turns", "error rate", "LLM calls", "tokens prompt/compl", "cost"]
    rows: list[list[str]] = []
    for e in report.entries:
        head = [e.design, e.profile,
                *([e.model + (" (SIMULATED)" if e.simulated else "")] if several else [])]
        for level, stats in [*e.by_hardness.items(), ("all", e)]:
            rows.append([*head, level, *_level_cells(stats)])
    return headers, rows


def sql_title(report: SQLBenchReport) -> str:
    sel = f"levels {','.join(report.hardness)}"
    if report.db:
        sel += f", database {report.db}"
    sel += f", {report.task_count} tasks"
    if report.limit is not None:
        sel += f" (limit {report.limit})"
    models = ", ".join(model_label(m) for m in report.models)
    return f"InterCode-SQL benchmark — {sel}, d_max {report.d_max}; model: {models}"


def sql_notes(report: SQLBenchReport) -> list[str]:
    out = ["success = reward 1.0; turns = environment actions per task; error rate = share of "
           "execute[...] actions answered with 'Error executing query' "
           f"(elapsed {report.elapsed_seconds:.2f} s at concurrency {report.concurrency})"]
    errors = sum(e.errors for e in report.entries)
    if errors:
        out.append(f"{errors} task run(s) ended with an error (see tasks.jsonl)")
    return out


def render_sql_table(report: SQLBenchReport) -> Table:
    headers, rows = sql_table_rows(report)
    table = Table(title=sql_title(report), title_justify="left")
    for h in headers:
        left = h in ("design", "profile", "model", "hardness")
        table.add_column(h, justify="left" if left else "right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def print_sql_table(report: SQLBenchReport, console: Console) -> None:
    """The rich table; off a terminal at its natural width (as ``report.print_table``)."""
    table = render_sql_table(report)
    if not console.is_terminal:
        wide = Console(file=console.file, width=10_000, color_system=None)
        width = Measurement.get(wide, wide.options, table).maximum
        console = Console(file=console.file, width=max(console.width, width), color_system=None)
    console.print(table)
    for note in sql_notes(report):
        console.print(note, style="dim", highlight=False)


def sql_to_markdown(report: SQLBenchReport) -> str:
    headers, rows = sql_table_rows(report)
    return markdown_table(sql_title(report), headers, rows, sql_notes(report),
                          left=("design", "profile", "model", "hardness"))


def write_sql_report(report: SQLBenchReport, out_dir: Path) -> list[Path]:
    """Write ``report.json``, ``report.md`` and ``tasks.jsonl`` into ``out_dir``."""
    return write_outputs(out_dir, report_json=report.to_json(),
                         markdown=sql_to_markdown(report), records=report.results)


__all__ = [
    "DESIGNS", "REAL_MODEL_REQUIRED", "SQLBenchEntry", "SQLBenchReport", "SQLTaskRecord",
    "count_actions", "parse_designs", "parse_hardness", "print_sql_table", "require_model_spec", "run_sql_bench",
    "run_sql_bench_async", "select_sql_tasks", "sql_to_markdown", "write_sql_report",
]
