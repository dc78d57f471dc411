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

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field
from typing_extensions import Unpack

from adapt.envs.intercode_sql import InterCodeSQL
from adapt.envs.intercode_sql.task_sets import HARDNESS, Task, tasks
from adapt.errors import InvalidConfig
from adapt.eval import designs
from adapt.eval.designs import DesignEntry, DesignOptions, DesignReport, DesignTaskRecord
from adapt.eval.designs import LevelStats as LevelStats
from adapt.eval.grid import items, synchronous
from adapt.eval.report import limited

#: design name -> (strategy, executor kind)
DESIGNS: dict[str, tuple[str, str]] = {
    "react": ("react", "react"),
    "stateflow": ("stateflow", "react"),  # the strategy runs its machine whatever the kind
    "plan_and_execute": ("plan_and_execute", "react"),
}
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


class SQLTaskRecord(DesignTaskRecord):
    """One task run: a line of ``tasks.jsonl``."""

    db: str
    hardness: str


class SQLBenchEntry(DesignEntry):
    """Aggregates for one (design, model, d_max): overall and per hardness level."""

    by_hardness: dict[str, LevelStats]


class SQLBenchReport(DesignReport):
    environment: str = "intercode_sql"
    hardness: list[str]
    db: str | None = None
    tasks_by_hardness: dict[str, int]
    entries: list[SQLBenchEntry]
    results: list[SQLTaskRecord] = Field(default_factory=list, exclude=True)


def sql_title(report: SQLBenchReport) -> str:
    sel = f"levels {','.join(report.hardness)}"
    if report.db:
        sel += f", database {report.db}"
    sel = limited(f"{sel}, {report.task_count} tasks", report.limit)
    return (f"InterCode-SQL benchmark — {sel}, d_max {report.d_max}; "
            f"model: {designs.models_title(report.models)}")


BENCH: designs.DesignBench[Task, SQLTaskRecord, SQLBenchEntry] = designs.DesignBench(
    title="InterCode-SQL", designs=DESIGNS, groups=HARDNESS, group_heading="hardness",
    by_group_key="by_hardness", env_class=InterCodeSQL, record=SQLTaskRecord, group_of=lambda r: r.hardness,
    entry_class=SQLBenchEntry,
    task_fields=lambda t: {"id": t.id, "db": t.db, "hardness": t.hardness},
    task_config=lambda t: t.config,
    error_note="answered with 'Error executing query'",
    default_designs=("react", "stateflow", "plan_and_execute"),
    real_model_required=REAL_MODEL_REQUIRED, title_of=sql_title,
    default_env=lambda path: InterCodeSQL,
)
DEFAULT_DESIGNS = BENCH.default_designs
require_model_spec = BENCH.require_model_spec
print_sql_table = BENCH.print_table
sql_to_markdown = BENCH.to_markdown
write_sql_report = BENCH.write_report


# -- argument parsing -----------------------------------------------------------------------
parse_designs = BENCH.parse_designs


def parse_hardness(value: str | Sequence[str] | None) -> list[str]:
    """``"easy,hard"`` -> ``["easy", "hard"]`` in Spider's order; ``None``: all four."""
    if value is None:
        return list(HARDNESS)
    names = items(value)
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
    return designs.select_in_turn(groups, limit)


async def run_sql_bench_async(
    path: str | Path, *, hardness: str | Sequence[str] | None = None, db: str | None = None,
    **options: Unpack[DesignOptions],
) -> SQLBenchReport:
    """Benchmark ``designs`` x ``models`` x ``profiles`` (``default``, ``paper``) on the
    InterCode-SQL tasks at ``path``.

    ``hardness`` (``"easy,medium"``; default all), ``db`` and ``limit`` select the tasks
    (``task_list`` overrides them). ``env_factory`` makes one environment per task run
    (default ``InterCodeSQL()``, connecting with the ``ADAPT_SQL_*`` settings). Simulated
    models are refused. Raises :class:`~adapt.errors.UserError` on bad arguments before
    anything runs.
    """
    limit = options.get("limit")
    selected, ran = await BENCH.run(
        path, lambda: select_sql_tasks(path, hardness, db, limit), options)
    counts = Counter(t.hardness for t in selected)
    return SQLBenchReport(
        data=str(path), hardness=parse_hardness(hardness), db=db, limit=limit,
        concurrency=options.get("concurrency", 8), task_count=len(selected),
        tasks_by_hardness={h: counts[h] for h in HARDNESS if counts[h]}, **ran.report_fields())


run_sql_bench = synchronous(run_sql_bench_async)


__all__ = [
    "DESIGNS", "REAL_MODEL_REQUIRED", "SQLBenchEntry", "SQLBenchReport", "SQLTaskRecord",
    "parse_designs", "parse_hardness", "print_sql_table", "require_model_spec", "run_sql_bench",
    "run_sql_bench_async", "select_sql_tasks", "sql_to_markdown", "write_sql_report",
]
