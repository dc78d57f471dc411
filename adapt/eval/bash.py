"""InterCode-Bash benchmark harness: agent designs x file systems on the NL2Bash requests.

Library entry point: :func:`run_bash_bench` (or :func:`run_bash_bench_async` inside an event
loop). CLI: ``adapt bench bash PATH``. There is no simulated Bash model: the command needs a real
OpenAI-compatible endpoint or a local model; scripted models (library use, tests) are labelled
SIMULATED in the report::

    OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench bash ../shared/data/intercode-bash \\
        --task-set all --designs react,stateflow,stateact,plan_and_execute,adapt \\
        --model openai:gpt-4o-mini --concurrency 8 --out runs/bash

Designs: ``react`` (ReAct executor), ``stateflow`` (the StateFlow Bash machine), ``stateact``
(StateAct executor), ``plan_and_execute`` and ``adapt``. Per design and file system the report
gives success (reward 1.0), mean reward, mean turns, the error rate (failed ``execute[...]``
actions -- non-zero exit status, time limit -- and invalid actions, over both), LLM calls, tokens and
cost, next to the published anchor (InterCode's GPT-3.5 ReAct, 10 turns: 41 of 200).

Each task run gets its own :class:`InterCodeBash` (its own sandbox), closed afterwards; the file
systems are prepared once before the runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import Field
from typing_extensions import Unpack

from adapt.envs.intercode_bash import TASK_SETS, InterCodeBash, Task, tasks
from adapt.errors import InvalidConfig
from adapt.eval import designs
from adapt.eval.designs import DesignEntry, DesignOptions, DesignReport, DesignTaskRecord
from adapt.eval.designs import LevelStats as LevelStats
from adapt.eval.grid import synchronous
from adapt.eval.report import limited

#: design name -> (strategy, executor kind)
DESIGNS: dict[str, tuple[str, str]] = {
    "react": ("react", "react"),
    "stateflow": ("stateflow", "react"),  # the strategy runs its machine whatever the kind
    "stateact": ("react", "stateact"),
    "plan_and_execute": ("plan_and_execute", "react"),
    "adapt": ("adapt", "react"),
}
FILE_SYSTEMS = ("fs1", "fs2", "fs3", "fs4")
#: the published number printed next to ours (InterCode, Yang et al. 2023)
ANCHOR = "published anchor: InterCode's GPT-3.5 ReAct (10 turns) solves 41 of the 200 (20.5%)"
REAL_MODEL_REQUIRED = (
    "the Bash bench needs a real OpenAI-compatible endpoint or a local model (there is no "
    "simulated Bash model): set OPENAI_API_KEY or pass --model, e.g. `OPENAI_API_KEY=... "
    "ADAPT_ALLOW_REMOTE_LLM=1 adapt bench bash PATH --model openai:gpt-4o-mini --limit 40 "
    "--out runs/bash` or --model 'openai-completions:smollm2@http://127.0.0.1:8080/v1'"
)

ResultCallback = Callable[["BashTaskRecord"], None]


class BashTaskRecord(DesignTaskRecord):
    """One task run: a line of ``tasks.jsonl``."""

    fs: int
    question: str


class BashBenchEntry(DesignEntry):
    """Aggregates for one (design, model, d_max): overall and per file system."""

    by_fs: dict[str, LevelStats]


class BashBenchReport(DesignReport):
    environment: str = "intercode_bash"
    task_set: str
    simulated: bool
    tasks_by_fs: dict[str, int]
    entries: list[BashBenchEntry]
    results: list[BashTaskRecord] = Field(default_factory=list, exclude=True)


def bash_title(report: BashBenchReport) -> str:
    sel = limited(f"task set {report.task_set}, {report.task_count} tasks", report.limit)
    return (f"InterCode-Bash benchmark — {sel}, d_max {report.d_max}; "
            f"model: {designs.models_title(report.models)}")


def _notes(report: BashBenchReport) -> list[str]:
    simulated = ["SIMULATED model(s): numbers come from scripted or simulated models, not an "
                 "LLM"] if report.simulated else []
    return [ANCHOR, *simulated]


def _environment(path: Path) -> Callable[[], InterCodeBash]:
    return lambda: InterCodeBash(data_dir=path)


BENCH: designs.DesignBench[Task, BashTaskRecord, BashBenchEntry] = designs.DesignBench(
    title="InterCode-Bash", designs=DESIGNS, groups=FILE_SYSTEMS, group_heading="fs",
    by_group_key="by_fs", env_class=InterCodeBash, record=BashTaskRecord, group_of=lambda r: f"fs{r.fs}",
    entry_class=BashBenchEntry,
    task_fields=lambda t: {"id": t.id, "fs": t.fs, "question": t.question},
    task_config=lambda t: t.config,
    error_note="that failed (non-zero exit status, time limit)",
    default_designs=tuple(DESIGNS), real_model_required=REAL_MODEL_REQUIRED,
    title_of=bash_title, default_env=_environment, extra_notes=_notes,
)
parse_designs = BENCH.parse_designs
require_model_spec = BENCH.require_model_spec
print_bash_table = BENCH.print_table
bash_to_markdown = BENCH.to_markdown
write_bash_report = BENCH.write_report


def select_bash_tasks(path: str | Path, task_set: str = "all",
                      limit: int | None = None) -> list[Task]:
    """The tasks of ``task_set`` (``fs1`` .. ``fs4`` or ``all``); ``limit`` takes the file
    systems in turn (file order within one), so a small limit still covers each of them."""
    if task_set not in TASK_SETS:
        raise InvalidConfig(f"unknown task set {task_set!r}; use one of: {', '.join(TASK_SETS)}")
    groups: dict[str, list[Task]] = {}
    for t in tasks(path, task_set):
        groups.setdefault(f"fs{t.fs}", []).append(t)
    return designs.select_in_turn(groups, limit)


async def run_bash_bench_async(path: str | Path, *, task_set: str = "all",
                               **options: Unpack[DesignOptions]) -> BashBenchReport:
    """Benchmark ``designs`` x ``models`` x ``profiles`` on the InterCode-Bash tasks at ``path``.

    ``task_set`` and ``limit`` select the tasks (``task_list`` overrides them).
    ``env_factory`` makes one environment per task run (default ``InterCodeBash(data_dir=
    path)``; the file systems the tasks need are prepared first). Raises
    :class:`~adapt.errors.UserError` on bad arguments before anything runs.
    """
    limit = options.get("limit")

    def selection() -> list[Task]:
        chosen = select_bash_tasks(path, task_set, limit)
        if options.get("env_factory") is None:  # prepared once, before the runs
            env = InterCodeBash(data_dir=path)
            for fs in sorted({t.fs for t in chosen}):
                env.layers(fs)
        return chosen

    selected, ran = await BENCH.run(path, selection, options)
    counts = Counter(f"fs{t.fs}" for t in selected)
    # a given list is named by the task set when it is that set's selection (the CLI passes
    # its selection, made first to size the progress bar)
    given = options.get("task_list")
    custom = given is not None and [t.id for t in given] != [
        t.id for t in select_bash_tasks(path, task_set, limit)]
    return BashBenchReport(
        data=str(path), task_set="custom" if custom else task_set,
        limit=limit, concurrency=options.get("concurrency", 8), task_count=len(selected),
        simulated=any(m.simulated for m in ran.models),
        tasks_by_fs={f: counts[f] for f in FILE_SYSTEMS if counts[f]}, **ran.report_fields())


run_bash_bench = synchronous(run_bash_bench_async)


__all__ = [
    "ANCHOR", "DESIGNS", "REAL_MODEL_REQUIRED", "BashBenchEntry", "BashBenchReport",
    "BashTaskRecord", "bash_to_markdown", "parse_designs", "print_bash_table",
    "require_model_spec", "run_bash_bench", "run_bash_bench_async", "select_bash_tasks",
    "write_bash_report",
]
