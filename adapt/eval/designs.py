"""Benches that compare agent *designs* on InterCode tasks (SQL, Bash), on the one grid.

A design is a strategy with its executor (``react``, ``stateflow``, ``plan_and_execute``, ...).
Per design and task group (SQL's hardness level, Bash's file system) an entry gives the success
rate (reward 1.0), mean reward, mean turns (environment actions per task), the error rate (share
of ``execute[...]`` actions the environment calls failed), LLM calls, tokens and cost. An
environment's bench supplies a :class:`DesignBench` (its names and groups) and its record and
report classes; everything else (running, counting, aggregating, the table, the files) is here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Generic, Required, TypedDict, TypeVar

from pydantic import BaseModel, Field
from rich.console import Console

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.events import Event, StepAppended
from adapt.engine.runtime import PriceFn
from adapt.engine.tree import UsageTotals
from adapt.envs.base import Environment
from adapt.errors import InvalidConfig, UserError
from adapt.eval.grid import (
    BenchModel,
    Cell,
    ClaimRecord,
    Design,
    ModelInfo,
    check_concurrency,
    claim_fields,
    claim_sums,
    make_cells,
    outcome_sums,
    parse_d_max,
    parse_names,
    parse_profiles,
    rate,
    result_fields,
    run_grid,
    usage_sums,
)
from adapt.eval.report import (
    _cost,
    _num,
    _pct,
    markdown_table,
    model_label,
    print_wide,
    rich_table,
    run_errors,
    write_outputs,
)

EXECUTE = re.compile(r"execute\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)

T = TypeVar("T")


class DesignTaskRecord(ClaimRecord):
    """One task run: a line of ``tasks.jsonl`` (with the claim, the checks of every task node
    and the executor calls per model, as every bench's records)."""

    id: str
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
    #: actions that were neither ``execute[...]`` nor ``submit`` (the environment refused them)
    invalid_actions: int = 0
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
    #: what the trees claimed before the environment's final check (the claims' success rate)
    self_assessed_success_rate: float = 0.0
    mean_reward: float
    mean_turns: float
    executes: int
    execute_errors: int
    invalid_actions: int = 0
    #: share of the attempted commands that failed: execute[...] actions that failed, and
    #: invalid actions, over both (0 when there were none)
    error_rate: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


class DesignEntry(LevelStats):
    """Aggregates for one (design, model, d_max): overall and per task group."""

    design: str
    profile: str = "default"
    strategy: str
    executor: str
    model: str
    simulated: bool
    d_max: int
    statuses: dict[str, int]
    errors: int
    wall_seconds: float
    #: share of the planner's sub-goals the environment could decide (None: none checked)
    checkable_subgoal_share: float | None = None


class DesignReport(BaseModel):
    environment: str
    data: str
    limit: int | None = None
    concurrency: int
    designs: list[str]
    profiles: list[str] = Field(default_factory=lambda: ["default"])
    d_max: int
    models: list[ModelInfo]
    task_count: int
    elapsed_seconds: float
    entries: Sequence[DesignEntry]
    results: Sequence[DesignTaskRecord] = Field(default_factory=list, exclude=True)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"


class DesignOptions(TypedDict, total=False):
    """The keyword arguments every design bench's entry point takes."""

    #: the models to compare (required)
    models: Required[Sequence[BenchModel] | BenchModel]
    limit: int | None
    designs: str | Sequence[str]
    d_max: int
    concurrency: int
    base_config: RunConfig | None
    price: PriceFn | None
    #: one environment per task run (default: the bench's)
    env_factory: Callable[[], Any] | None
    #: these tasks instead of the selection
    task_list: Sequence[Any] | None
    on_result: Callable[[Any], None] | None
    profiles: str | Sequence[str]


R = TypeVar("R", bound=DesignTaskRecord)
E = TypeVar("E", bound=DesignEntry)


@dataclass(frozen=True)
class DesignBench(Generic[T, R, E]):
    """What one environment's design bench is made of."""

    title: str                       # "InterCode-SQL"
    designs: dict[str, tuple[str, str]]  # design name -> (strategy, executor kind)
    groups: tuple[str, ...]          # the task groups in report order
    group_heading: str               # the table column: "hardness", "fs"
    by_group_key: str                # the entry field: "by_hardness", "by_fs"
    env_class: type[Any]
    record: Callable[..., R]         # the record class
    group_of: Callable[[R], str]     # a record's group: its hardness level, its file system
    entry_class: type[E]
    task_fields: Callable[[T], dict[str, Any]]  # the record fields a task gives (id, group, ...)
    task_config: Callable[[T], dict[str, Any]]
    error_note: str                  # what a failed execute[...] is, for the notes
    default_designs: tuple[str, ...]
    real_model_required: str         # the message when no real model is given
    title_of: Callable[[Any], str]   # the report's title
    default_env: Callable[[Path], Callable[[], Any]]  # data dir -> environment factory
    extra_notes: Callable[[Any], list[str]] = lambda report: []

    def require_model_spec(self, spec: str | None) -> str:
        """``spec`` when it names a real model; the simulators cannot act here."""
        from adapt.llm.spec import is_simulated

        if not spec or is_simulated(spec):
            raise UserError(self.real_model_required)
        return spec

    async def run(self, path: str | Path, selected: Callable[[], Sequence[T]],
                  options: DesignOptions) -> tuple[list[T], DesignRun[R, E]]:
        """Check the options, select the tasks, run the grid: the selection and the run."""
        designs = options.get("designs", self.default_designs)
        self.parse_designs(designs)
        d_max = options.get("d_max", 3)
        parse_d_max(d_max)
        models = options["models"]
        bench_models = [models] if isinstance(models, BenchModel) else list(models)
        if not bench_models:
            raise UserError(self.real_model_required)
        concurrency = check_concurrency(options.get("concurrency", 8))
        task_list = options.get("task_list")
        tasks = list(task_list) if task_list is not None else list(selected())
        ran = await run_designs(
            self, tasks, models=bench_models, designs=designs,
            profiles=options.get("profiles", "default"), d_max=d_max, concurrency=concurrency,
            base_config=options.get("base_config"), price=options.get("price"),
            env_factory=options.get("env_factory") or self.default_env(Path(path)),
            on_result=options.get("on_result"))
        return tasks, ran

    def parse_designs(self, value: str | Sequence[str]) -> list[str]:
        return parse_names(value, list(self.designs), option="--designs",
                           example="react,stateflow", noun=("design", "designs"),
                           listed_as="known")

    def entry(self, records: Sequence[R], cell: Cell) -> E:
        present = [g for g in self.groups if any(self.group_of(r) == g for r in records)]
        return self.entry_class(
            **level_stats(records).model_dump(), **outcome_sums(records),
            checkable_subgoal_share=claim_sums(records)["checkable_subgoal_share"],
            design=cell.design.name, profile=cell.profile, strategy=cell.strategy,
            executor=cell.executor, model=cell.model.label, simulated=cell.model.simulated,
            d_max=cell.d_max,
            **{self.by_group_key: {g: level_stats([r for r in records if self.group_of(r) == g])
                                   for g in present}},
        )

    # -- rendering
    @property
    def left(self) -> tuple[str, ...]:
        return ("design", "profile", "model", self.group_heading)

    def rows(self, several_models: bool, entries: Sequence[DesignEntry]
             ) -> tuple[list[str], list[list[str]]]:
        """One row per (design, model, group), the group ``all`` last for each."""
        headers = ["design", "profile", *(["model"] if several_models else []),
                   self.group_heading, "success", "self-assessed", "mean reward", "mean turns", "error rate",
                   "LLM calls", "tokens prompt/compl", "cost"]
        rows: list[list[str]] = []
        for e in entries:
            head = [e.design, e.profile, *([e.model + (" (SIMULATED)" if e.simulated else "")]
                                           if several_models else [])]
            by_group: dict[str, LevelStats] = getattr(e, self.by_group_key)
            groups: list[tuple[str, LevelStats]] = [*by_group.items(), ("all", e)]
            for group, stats in groups:
                rows.append([*head, group, *_level_cells(stats)])
        return headers, rows

    def notes(self, report: DesignReport) -> list[str]:
        out = ["success = reward 1.0; self-assessed = what the tree claimed before the "
               "environment's final check; turns = environment actions per task; error rate = share "
               f"of the commands tried that failed: execute[...] actions {self.error_note}, and "
               "invalid actions (neither execute[...] nor submit) (elapsed "
               f"{report.elapsed_seconds:.2f} s at concurrency {report.concurrency})",
               *self.extra_notes(report)]
        return [*out, *run_errors(report.entries)]

    def to_markdown(self, report: DesignReport) -> str:
        headers, rows = self.rows(len(report.models) > 1, report.entries)
        return markdown_table(self.title_of(report), headers, rows, self.notes(report),
                              left=self.left)

    def print_table(self, report: DesignReport, console: Console) -> None:
        """The rich table; off a terminal at its natural width (as ``report.print_table``)."""
        headers, rows = self.rows(len(report.models) > 1, report.entries)
        print_wide(rich_table(self.title_of(report), headers, rows, left=self.left),
                   self.notes(report), console)

    def write_report(self, report: DesignReport, out_dir: Path) -> list[Path]:
        """Write ``report.json``, ``report.md`` and ``tasks.jsonl`` into ``out_dir``."""
        return write_outputs(out_dir, report_json=report.to_json(),
                             markdown=self.to_markdown(report), records=report.results)


class ActionCounter(MemorySink):
    """A sink that counts a run's environment actions as they happen: all of them, the
    ``execute[...]`` ones and those of them the environment calls failed (asked at once, while
    its state is that of the step), and the invalid ones (neither a command nor ``submit``)."""

    def __init__(self, env: Environment) -> None:
        super().__init__()
        self.env = env
        self.turns = self.executes = self.failed = self.invalid = 0

    async def emit(self, event: Event) -> None:
        await super().emit(event)
        if isinstance(event, StepAppended) and event.step.kind == "action":
            self.turns += 1
            if EXECUTE.fullmatch(event.step.text.strip()):
                self.executes += 1
                self.failed += self.env.is_failure(event.step.observation)
            elif event.step.text.strip().lower() != "submit":
                self.invalid += 1


def level_stats(records: Sequence[DesignTaskRecord]) -> LevelStats:
    n = len(records)
    executes = sum(r.executes for r in records)
    failed = sum(r.execute_errors for r in records)
    invalid = sum(r.invalid_actions for r in records)
    return LevelStats(
        tasks=n,
        successes=sum(r.solved for r in records),
        success_rate=rate(sum(r.solved for r in records), n),
        self_assessed_success_rate=rate(sum(r.claimed for r in records), n),
        mean_reward=rate(sum(r.reward for r in records), n),
        mean_turns=rate(sum(r.turns for r in records), n),
        executes=executes,
        execute_errors=failed,
        invalid_actions=invalid,
        error_rate=rate(failed + invalid, executes + invalid),
        **usage_sums(records),
    )


async def _run_one(bench: DesignBench[T, R, E], env_factory: Callable[[], Environment],
                   price: PriceFn | None, cell: Cell, task: T) -> R:
    env = env_factory()
    sink = ActionCounter(env)
    try:
        result = await run_task(env, {**cell.env_extra, **bench.task_config(task)}, cell.config,
                                cell.model.executors, cell.model.planner, sink=sink, price=price)
    finally:
        env.close()
    return bench.record(
        **bench.task_fields(task), design=cell.design.name, profile=cell.profile,
        model=cell.model.label, d_max=cell.d_max, turns=sink.turns, executes=sink.executes,
        execute_errors=sink.failed, invalid_actions=sink.invalid, **result_fields(result),
        **claim_fields(result, sink))


@dataclass
class DesignRun(Generic[R, E]):
    designs: list[str]
    profiles: list[str]
    d_max: int
    models: list[ModelInfo]
    entries: list[E]
    records: list[R]
    elapsed_seconds: float

    def report_fields(self) -> dict[str, Any]:
        return {"designs": self.designs, "profiles": self.profiles, "d_max": self.d_max,
                "models": self.models, "entries": self.entries, "results": self.records,
                "elapsed_seconds": self.elapsed_seconds}


async def run_designs(bench: DesignBench[T, R, E], tasks: Sequence[T], *,
                      models: Sequence[BenchModel], designs: str | Sequence[str],
                      profiles: str | Sequence[str], d_max: int, concurrency: int,
                      base_config: RunConfig | None, price: PriceFn | None,
                      env_factory: Callable[[], Environment],
                      on_result: Callable[[R], None] | None) -> DesignRun[R, E]:
    """Every (model, profile, design, task) of ``bench`` on the grid, aggregated."""
    names = bench.parse_designs(designs)
    profile_names = parse_profiles(profiles)
    (depth,) = parse_d_max(d_max)
    choices = [Design(n, *bench.designs[n]) for n in names]
    cells = make_cells(models, profile_names, choices, [depth], [], env=bench.env_class,
                       base_config=base_config)
    ran = await run_grid(cells, tasks, partial(_run_one, bench, env_factory, price),
                         concurrency=concurrency, on_result=on_result)
    entries = [bench.entry(chunk, c) for c, chunk in zip(cells, ran.chunks(), strict=True)]
    return DesignRun(names, profile_names, depth, [m.info() for m in models], entries,
                     ran.records, ran.elapsed_seconds)


def select_in_turn(groups: dict[str, list[T]], limit: int | None) -> list[T]:
    """Every task of ``groups`` (in group order), or ``limit`` of them with the groups taking
    turns (each group's first ones), so a small limit still covers every group."""
    from adapt.eval.grid import take_in_turn

    if limit is not None and limit < 1:
        raise InvalidConfig(f"--limit must be at least 1, got {limit}")
    if limit is None:
        return [t for g in groups.values() for t in g]
    quota = take_in_turn(groups, limit)
    return [t for key, g in groups.items() for t in g[: quota[key]]]


# -- rendering --------------------------------------------------------------------------------
def _level_cells(s: LevelStats) -> list[str]:
    return [f"{_pct(s.success_rate)} ({s.successes}/{s.tasks})",
            _pct(s.self_assessed_success_rate), f"{s.mean_reward:.3f}",
            f"{s.mean_turns:.2f}", f"{_pct(s.error_rate)} ({s.execute_errors + s.invalid_actions}/"
            f"{s.executes + s.invalid_actions})",
            str(s.llm_calls), f"{_num(s.prompt_tokens)}/{_num(s.completion_tokens)}",
            _cost(s.cost_usd, False)]


def models_title(models: Sequence[ModelInfo]) -> str:
    return ", ".join(model_label(m) for m in models)
