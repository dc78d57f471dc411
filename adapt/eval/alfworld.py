"""ALFWorld benchmark harness: strategies x models x d_max over a game set, success by task type
(the papers' tables: ADaPT table 2, StateFlow table 3, StateAct table 2).

Library entry point: :func:`run_alfworld_bench`. CLI: ``adapt bench alfworld``::

    # generated games (offline; the test set: 120 games, 20 per task type)
    adapt bench alfworld --split test --limit 30 --strategies adapt,react --d-max 3 \\
        --model 'openai:llama3@http://127.0.0.1:11434/v1' --out runs/alf

    # the official valid_unseen games (134), when ALFWorld's data is installed
    ALFWORLD_DATA=~/alfworld adapt bench alfworld --split valid_unseen --model openai:gpt-4o-mini

Games: the generated sets ``dev`` and ``test`` (``adapt.envs.alfworld.games``) or an official
split (``train``, ``valid_seen``, ``valid_unseen`` under ``data_dir`` / ``$ALFWORLD_DATA``).
``limit`` takes task types in turn (the same arguments always pick the same games). Generated
games are generated (and validated) before any task runs, so their cost is not in task times.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel, Field

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.runtime import PriceFn
from adapt.errors import InvalidConfig
from adapt.eval.grid import (
    BenchModel,
    Cell,
    ModelInfo,
    check_concurrency,
    claim_fields,
    claim_sums,
    make_cells,
    outcome_sums,
    parse_d_max,
    parse_executor_kinds,
    parse_names,
    parse_profiles,
    parse_strategies,
    rate,
    result_fields,
    run_grid,
    strategies_as_designs,
    synchronous,
    take_in_turn,
    tree_fields,
    usage_sums,
)
from adapt.eval.report import (
    EntryBase,
    ReportBase,
    TaskRecord,
    _cost,
    _pct,
    limited,
    markdown_table,
    model_label,
    print_wide,
    rich_table,
    run_errors,
    write_outputs,
)

#: the task types, in the papers' column order
TASK_TYPES: tuple[str, ...] = ("pick", "clean", "heat", "cool", "examine", "pick_two")
SPLITS: tuple[str, ...] = ("dev", "test", "train", "valid_seen", "valid_unseen")
DEFAULT_STRATEGIES = ("adapt", "react")
DEFAULT_D_MAX = (3,)  # ADaPT's ALFWorld setting

ResultCallback = Callable[["ALFWorldTaskRecord"], None]


class ALFWorldTaskRecord(TaskRecord):
    """One task run (a line of ``tasks.jsonl``); ``item`` is the task sentence."""

    task_type: str
    #: the executor design (``RunConfig.executor.kind``)
    executor: str = "react"


class TypeStats(BaseModel):
    tasks: int
    successes: int
    success_rate: float


class ALFWorldEntry(EntryBase):
    """Aggregates for one (strategy, model, d_max) on ALFWorld."""

    by_type: dict[str, TypeStats]
    executor: str = "react"


class ALFWorldBenchReport(ReportBase):
    environment: str = "alfworld"
    executors: list[str] = Field(default_factory=lambda: ["react"])
    task_type: str | None = None
    tasks_by_type: dict[str, int]
    #: generating (and validating) the generated games before the runs
    generation_seconds: float
    entries: list[ALFWorldEntry]
    results: list[ALFWorldTaskRecord] = Field(default_factory=list, exclude=True)


@dataclass(frozen=True)
class BenchGame:
    id: str
    task_type: str
    config: dict[str, Any]


def parse_task_types(value: str | Sequence[str] | None) -> list[str]:
    """``"clean,heat"`` -> ``["clean", "heat"]`` (None: all six)."""
    if value is None:
        return list(TASK_TYPES)
    return parse_names(value, TASK_TYPES, option="--task-type", example="clean,heat",
                       noun=("task type", "task types"), listed_as="task types")


def select_games(split: str = "test", task_types: str | Sequence[str] | None = None,
                 limit: int | None = None, data_dir: str | None = None) -> list[BenchGame]:
    """The games of ``split`` of the given task types; ``limit`` takes the types in turn."""
    from adapt.envs.alfworld import games

    if split not in SPLITS:
        raise InvalidConfig(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    if limit is not None and limit < 1:
        raise InvalidConfig(f"--limit must be at least 1, got {limit}")
    kinds = parse_task_types(task_types)
    found: list[BenchGame] = []
    if split in games.GENERATED_SETS:
        for ref in games.generated_set(split):
            found.append(BenchGame(ref.id, ref.task_type, ref.config))
    else:
        root = games.data_root(data_dir, split)
        for i, path in enumerate(games.official_games(root)):
            kind = games.task_type_of(path.parent) or "unknown"
            found.append(BenchGame(f"alfworld/{split}/{i}", kind, {"split": split, "index": i,
                                   **({"data_dir": data_dir} if data_dir else {})}))
    chosen = [g for g in found if g.task_type in kinds]
    if not chosen:
        raise InvalidConfig(f"no ALFWorld games of type {', '.join(kinds)} in split {split!r}")
    if limit is None or limit >= len(chosen):
        return chosen
    groups = {k: [g for g in chosen if g.task_type == k] for k in kinds}
    quota = take_in_turn(groups, limit)
    picked = [g for k in kinds for g in groups[k][: quota[k]]]
    return sorted(picked, key=chosen.index)


def prepare(selected: Sequence[BenchGame]) -> float:
    """Generate (and validate) the generated games now; returns the seconds it took."""
    from adapt.envs.alfworld import games

    started = time.monotonic()
    for game in selected:
        if game.config.get("split") in games.GENERATED_SETS:
            games.generated_game(game.config["split"], game.config["index"])
    return time.monotonic() - started


async def _run_one(cell: Cell, game: BenchGame, price: PriceFn | None) -> ALFWorldTaskRecord:
    from adapt.envs.alfworld import ALFWorld

    env = ALFWorld()
    sink = MemorySink()
    try:
        result = await run_task(env, {**cell.env_extra, **game.config}, cell.config,
                                cell.model.executors, cell.model.planner, price=price, sink=sink)
        item = env.goal
    finally:
        env.close()
    return ALFWorldTaskRecord(
        id=game.id, item=item, depth=0, task_type=game.task_type, strategy=cell.strategy,
        profile=cell.profile, executor=cell.executor, model=cell.model.label,
        d_max=cell.d_max, **result_fields(result), **tree_fields(result),
        monitor=result.monitor, **claim_fields(result, sink),
    )


def aggregate(records: Sequence[ALFWorldTaskRecord], *, model: ModelInfo, strategy: str,
              d_max: int, profile: str = "default", executor: str = "react") -> ALFWorldEntry:
    wins = [r for r in records if r.solved]
    by_type = {}
    for kind in TASK_TYPES:
        of_kind = [r for r in records if r.task_type == kind]
        if of_kind:
            n = sum(r.solved for r in of_kind)
            by_type[kind] = TypeStats(tasks=len(of_kind), successes=n,
                                      success_rate=rate(n, len(of_kind)))
    sums = {**usage_sums(records), **outcome_sums(records), **claim_sums(records)}
    return ALFWorldEntry(
        strategy=strategy, profile=profile, executor=executor, model=model.label,
        simulated=model.simulated, d_max=d_max,
        tasks=len(records), successes=len(wins), success_rate=rate(len(wins), len(records)),
        by_type=by_type, mean_task_seconds=rate(sums["wall_seconds"], len(records)), **sums,
    )


async def run_alfworld_bench_async(
    *,
    split: str = "test",
    task_types: str | Sequence[str] | None = None,
    limit: int | None = None,
    data_dir: str | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    d_max: str | int | Sequence[int] = DEFAULT_D_MAX,
    models: Sequence[BenchModel] | BenchModel,
    concurrency: int = 4,
    seed: int | None = 0,
    base_config: RunConfig | None = None,
    price: PriceFn | None = None,
    on_result: ResultCallback | None = None,
    profiles: str | Sequence[str] = "default",
    executor_kind: str | Sequence[str] = "react",
) -> ALFWorldBenchReport:
    """Run every (model, profile, strategy, d_max, game) and aggregate; see the module
    docstring. ``profiles``: ``default``, ``paper`` or both; the profile fills in what
    ``base_config`` leaves unset (``paper``: roll-back of failed sub-tasks, token limits...)."""
    from adapt.envs.alfworld import ALFWorld

    names = parse_strategies(strategies)
    profile_names = parse_profiles(profiles)
    kinds = parse_executor_kinds(executor_kind)
    depths = parse_d_max(d_max)
    bench_models = [models] if isinstance(models, BenchModel) else list(models)
    if not bench_models:
        raise InvalidConfig("no models to benchmark")
    check_concurrency(concurrency)
    selected = select_games(split, task_types, limit, data_dir)
    generation = prepare(selected)
    cells = make_cells(bench_models, profile_names, strategies_as_designs(names), depths, kinds,
                       env=ALFWorld, base_config=base_config, settings={"seed": seed})
    ran = await run_grid(cells, selected, partial(_run_one, price=price),
                         concurrency=concurrency, on_result=on_result)
    entries = [aggregate(chunk, model=c.model.info(), strategy=c.strategy, d_max=c.d_max,
                         profile=c.profile, executor=c.executor)
               for c, chunk in zip(cells, ran.chunks(), strict=True)]
    counts = Counter(g.task_type for g in selected)
    return ALFWorldBenchReport(
        split=split, task_type=None if task_types is None else ",".join(
            parse_task_types(task_types)),
        limit=limit, seed=seed, concurrency=concurrency, strategies=names,
        profiles=profile_names, executors=kinds, d_max=depths,
        models=[m.info() for m in bench_models], simulated=any(m.simulated for m in bench_models),
        task_count=len(selected),
        tasks_by_type={k: counts[k] for k in [*TASK_TYPES, "unknown"] if counts[k]},
        elapsed_seconds=ran.elapsed_seconds, generation_seconds=generation, entries=entries,
        results=ran.records,
    )


run_alfworld_bench = synchronous(run_alfworld_bench_async)


# -- rendering --------------------------------------------------------------------------------
def table_rows(report: ALFWorldBenchReport) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: one row per (strategy, model, d_max), success per task type."""
    kinds = [k for k in [*TASK_TYPES, "unknown"] if k in report.tasks_by_type]
    headers = ["strategy", "profile", "model", "d_max", "tasks", "success", "self-assessed",
               *(f"{k} (n={report.tasks_by_type[k]})" for k in kinds),
               "LLM calls", "tokens prompt/compl", "cost", "wall s"]
    rows = []
    for e in report.entries:
        name = e.strategy if len(report.executors) == 1 else f"{e.strategy} · {e.executor}"
        cells = [name, e.profile, model_label(ModelInfo(label=e.model, executor="", planner="",
                                                   simulated=e.simulated)),
                 str(e.d_max), str(e.tasks), f"{_pct(e.success_rate)} ({e.successes})",
                 _pct(e.self_assessed_success_rate)]
        for k in kinds:
            s = e.by_type.get(k)
            cells.append("–" if s is None else f"{_pct(s.success_rate)} ({s.successes}/{s.tasks})")
        cells += [str(e.llm_calls), f"{e.prompt_tokens}/{e.completion_tokens}",
                  _cost(e.cost_usd, False), f"{e.wall_seconds:.2f}"]
        rows.append(cells)
    return headers, rows


def title(report: ALFWorldBenchReport) -> str:
    sel = limited(f"split {report.split}, {report.task_count} games", report.limit)
    return f"ALFWorld benchmark — {sel}, seed {report.seed}"


def notes(report: ALFWorldBenchReport) -> list[str]:
    out = ["success = environment reward > 0 (the goal holds), by task type as in the papers' "
           "tables; self-assessed = what the tree claimed before the environment's final check; "
           f"elapsed {report.elapsed_seconds:.2f} s at concurrency {report.concurrency}"
           f", game generation {report.generation_seconds:.2f} s before the runs"]
    if report.simulated:
        out.append("SIMULATED model(s): numbers come from scripted or simulated models")
    return [*out, *run_errors(report.entries)]


def to_markdown(report: ALFWorldBenchReport) -> str:
    headers, rows = table_rows(report)
    return markdown_table(title(report), headers, rows, notes(report),
                          left=("strategy", "profile", "model"))


def print_alfworld_table(report: ALFWorldBenchReport, console: Any) -> None:
    """The table on ``console``; not on a terminal (a pipe, a file), at its natural width."""
    headers, rows = table_rows(report)
    print_wide(rich_table(title(report), headers, rows, left=("strategy", "model")),
               notes(report), console)


def write_alfworld_report(report: ALFWorldBenchReport, out_dir: Any) -> list[Any]:
    """Write ``report.json``, ``report.md`` and ``tasks.jsonl`` into ``out_dir``."""
    return write_outputs(out_dir, report_json=report.model_dump_json(indent=2) + "\n",
                         markdown=to_markdown(report), records=report.results)


__all__ = [
    "ALFWorldBenchReport", "ALFWorldEntry", "ALFWorldTaskRecord", "BenchGame",
    "print_alfworld_table", "run_alfworld_bench", "run_alfworld_bench_async", "select_games",
    "write_alfworld_report",
]
