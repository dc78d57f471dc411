"""TextCraft benchmark harness: strategies x models x d_max over a task selection.

Library entry point: :func:`run_bench` (or :func:`run_bench_async` inside an event loop).
Strategies are named as in the engine registry (``RunConfig(strategy=...)``), so strategies
registered later just work. CLI: ``adapt bench textcraft``::

    # simulated model (offline, deterministic for a given seed)
    adapt bench textcraft --split test --limit 40 --strategies adapt,react --d-max 1,2,3,4 \\
        --model 'sim:textcraft?capability=1&error_rate=0.1&seed=7' --out runs/tc --plot

    # a real OpenAI-compatible endpoint (not run in CI; remote endpoints need
    # ADAPT_ALLOW_REMOTE_LLM=1, loopback ones such as Ollama/vLLM do not)
    OPENAI_API_KEY=... ADAPT_ALLOW_REMOTE_LLM=1 adapt bench textcraft --split test \\
        --strategies adapt,react --d-max 4 --model openai-completions:gpt-3.5-turbo-instruct \\
        --concurrency 16 --out runs/tc-gpt35
    adapt bench textcraft --model 'openai:llama3@http://127.0.0.1:11434/v1' --limit 20

Task selection with ``limit`` is stratified across recipe depths: depths take turns, and within
a depth the picks are evenly spaced over its (sorted) tasks, so a small limit still covers
every depth and the same arguments always pick the same tasks.

Executor designs: ``executor_kind`` (``"react"``, ``"stateact"``, ``"react,stateact"``, ...) runs
every strategy with each executor (``RunConfig.executor.kind``); entries and task records carry
the kind (key ``executor``) and are ordered (model, strategy, d_max, executor), so the executors'
entries for the same setting sit side by side.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, get_args

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.experience import MemoryLibrary
from adapt.engine.runtime import PriceFn
from adapt.envs.textcraft import TextCraft, TextCraftConfig
from adapt.envs.textcraft.task_sets import Task, tasks
from adapt.errors import InvalidConfig
from adapt.eval.grid import (
    BenchModel,
    Cell,
    as_models,
    check_concurrency,
    claim_fields,
    make_cells,
    parse_d_max,
    parse_executor_kinds,
    parse_profiles,
    parse_strategies,
    result_fields,
    run_grid,
    strategies_as_designs,
    synchronous,
    take_in_turn,
    tree_fields,
)
from adapt.eval.report import (
    BenchEntry,
    BenchReport,
    TaskRecord,
    aggregate,
)
from adapt.settings import SIM_DEFAULT_MODEL

SPLITS = ("dev", "test", "all")
DEFAULT_STRATEGIES = ("adapt", "react")
DEFAULT_D_MAX = (4,)  # the paper's TextCraft setting
DEFAULT_EXECUTOR = "react"
#: the TextCraft prompt sets (``TextCraftConfig.prompts``; ``small`` suits small local models)
PROMPT_SETS: tuple[str, ...] = get_args(TextCraftConfig.model_fields["prompts"].annotation)

ResultCallback = Callable[[TaskRecord], None]


class ExecutorTaskRecord(TaskRecord):
    """A task record that names the executor design it ran with."""

    executor: str = DEFAULT_EXECUTOR
    #: task nodes solved by replaying a library solution (``reuse.skills``)
    reused_nodes: int = 0
    #: decomposed nodes that took a stored plan without a planner call (``reuse.plans``)
    reused_plans: int = 0
    #: stored plans taken that failed, after which the planner planned again
    replanned_plans: int = 0


class ExecutorBenchEntry(BenchEntry):
    """Aggregates for one (strategy, model, d_max, executor)."""

    executor: str = DEFAULT_EXECUTOR


class ExecutorBenchReport(BenchReport):
    """A benchmark report whose entries and records carry the executor design.

    A run with only the default executor (``react``) serializes exactly as a plain
    :class:`BenchReport` (no ``executors`` / entry ``executor`` keys), so earlier report files
    and readers stay valid; with any other kind every entry has its ``executor`` key. Task
    records always have it.
    """

    executors: list[str] = Field(default_factory=lambda: [DEFAULT_EXECUTOR])
    #: the TextCraft prompt set every task ran with (omitted from JSON when ``default``)
    prompts: str = "default"
    entries: list[ExecutorBenchEntry]  # type: ignore[assignment]  # a narrower entry type
    results: list[ExecutorTaskRecord] = Field(  # type: ignore[assignment]
        default_factory=list, exclude=True)

    @model_serializer(mode="wrap")
    def _default_executor_as_before(self, handler: SerializerFunctionWrapHandler
                                    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.executors == [DEFAULT_EXECUTOR]:
            data.pop("executors", None)
            for entry in data.get("entries", ()):
                entry.pop("executor", None)
        if self.prompts == "default":
            data.pop("prompts", None)
        return data


def _spread(items: Sequence[Task], k: int) -> list[Task]:
    n = len(items)
    return [items[(2 * i + 1) * n // (2 * k)] for i in range(k)] if k < n else list(items)


def select_tasks(split: str = "test", depth: int | None = None,
                 limit: int | None = None) -> list[Task]:
    """The benchmark's tasks, sorted by (depth, item); ``limit`` is stratified by depth."""
    if split not in SPLITS:
        raise InvalidConfig(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    if limit is not None and limit < 1:
        raise InvalidConfig(f"--limit must be at least 1, got {limit}")
    chosen = tasks(split, depth)  # type: ignore[arg-type]  # checked against SPLITS above
    if not chosen:
        where = f"split {split!r}" + (f" at recipe depth {depth}" if depth is not None else "")
        available = sorted({t.depth for t in tasks(split)})  # type: ignore[arg-type]
        raise InvalidConfig(f"no TextCraft tasks in {where}; recipe depths there: "
                            f"{', '.join(map(str, available))}")
    if limit is None or limit >= len(chosen):
        return chosen
    groups: dict[int, list[Task]] = {}
    for t in chosen:
        groups.setdefault(t.depth, []).append(t)
    groups = dict(sorted(groups.items()))
    quota = take_in_turn(groups, limit)
    return [t for d in sorted(groups) for t in _spread(groups[d], quota[d])]


def read_task_ids(path: str | Path, limit: int | None = None) -> list[Task]:
    """The tasks a file names, in its order: one task id a line (``textcraft/ladder`` or
    ``ladder``), blank lines and ``#`` comments skipped; ``limit``: the first N. A fixed list
    in an interleaved depth order (``docs/data/textcraft-test-24.txt``) keeps every prefix
    stratified, so a run stopped early still covers every depth."""
    if limit is not None and limit < 1:
        raise InvalidConfig(f"--limit must be at least 1, got {limit}")
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidConfig(f"--tasks: cannot read {str(path)!r}: {exc.strerror}") from None
    known = {t.id: t for t in tasks("all")}
    chosen: list[Task] = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        task_id = text if text.startswith("textcraft/") else f"textcraft/{text}"
        if task_id not in known:
            raise InvalidConfig(f"--tasks: {path}:{number}: unknown TextCraft task {text!r}")
        if known[task_id] in chosen:
            raise InvalidConfig(f"--tasks: {path}:{number}: task {text!r} is listed twice")
        chosen.append(known[task_id])
    if not chosen:
        raise InvalidConfig(f"--tasks: {path} names no tasks")
    return chosen[:limit] if limit is not None else chosen


# -- running ----------------------------------------------------------------------------------
async def _run_one(cell: Cell, task: Task, price: PriceFn | None,
                   libraries: dict[int, MemoryLibrary] | None = None,
                   learn: bool = True) -> ExecutorTaskRecord:
    env = TextCraft()
    sink = MemorySink()
    library = (libraries[id(cell)].for_task(task.id, learn=learn) if libraries is not None
               else None)
    try:
        result = await run_task(env, {**task.config, **cell.env_extra}, cell.config,
                                cell.model.executors, cell.model.planner, price=price, sink=sink,
                                library=library)
    finally:
        env.close()
    return ExecutorTaskRecord(
        id=task.id, item=task.item, depth=task.depth, strategy=cell.strategy,
        profile=cell.profile, model=cell.model.label, d_max=cell.d_max,
        executor=cell.executor, **result_fields(result), **tree_fields(result),
        monitor=result.monitor, **claim_fields(result, sink),
        reused_nodes=sum(1 for n in sink.nodes.values() if n.reused is not None),
        reused_plans=sum(1 for n in sink.nodes.values() if n.plan is not None
                         and (n.plan.reused or {}).get("mode") == "reuse"),
        replanned_plans=sum(1 for n in sink.nodes.values() if n.plan is not None and any(
            w.startswith("planned again") for w in n.plan.warnings)),
    )


async def run_bench_async(
    *,
    split: str = "test",
    depth: int | None = None,
    limit: int | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    d_max: str | int | Sequence[int] = DEFAULT_D_MAX,
    models: Sequence[BenchModel | str] | BenchModel | str | None = None,
    concurrency: int = 8,
    seed: int | None = 0,
    base_config: RunConfig | None = None,
    price: PriceFn | None = None,
    task_list: Sequence[Task] | None = None,
    on_result: ResultCallback | None = None,
    executor_kind: str | Sequence[str] = DEFAULT_EXECUTOR,
    prompts: str = "default",
    profiles: str | Sequence[str] = "default",
    library: MemoryLibrary | None = None,
    learn: bool = False,
    share_library: bool = False,
) -> ExecutorBenchReport:
    """Benchmark ``strategies`` x ``models`` x ``d_max`` x executors on TextCraft tasks.

    ``models``: :class:`BenchModel` objects or model specs (default: the simulated TextCraft
    model). ``seed`` goes into every ``RunConfig.seed``; the simulator's own seed is the one
    in its spec. ``base_config`` supplies the other run settings (executor steps, budget).
    ``task_list`` overrides the (``split``, ``depth``, ``limit``) selection. ``on_result`` is
    called as each task run finishes (completion order); the report itself is ordered by
    (model, strategy, d_max, executor, task) and does not depend on completion order.
    ``executor_kind``: the executor design(s) every strategy runs with (``RunConfig.executor
    .kind``): one kind or several (``"react,stateact"``); each entry and record says which
    (key ``executor``). ``prompts``: the TextCraft prompt set (``default`` or ``small``, the
    short few-shot prompts for small local models such as ``local:smollm2``). ``profiles``:
    ``default``, ``paper`` or both (``"default,paper"``); each entry and record says which
    (key ``profile``); a profile fills in what ``base_config`` and ``prompts`` leave unset.
    ``library``: the experience library the runs use (with ``reuse.skills`` on in
    ``base_config``): each cell starts from its own copy (``share_library``: every cell uses
    ``library`` itself, e.g. to warm it); ``learn``: the runs add what they learn and count
    their replays (else the library is frozen: every task sees the same library).

    Raises :class:`~adapt.errors.UserError` for unknown strategies, bad d_max values, an
    unknown split or an empty selection, before anything runs.
    """
    names = parse_strategies(strategies)
    profile_names = parse_profiles(profiles)
    if prompts not in PROMPT_SETS:
        raise InvalidConfig(f"unknown prompt set {prompts!r}; use one of: "
                            f"{', '.join(PROMPT_SETS)}")
    depths = parse_d_max(d_max)
    kinds = parse_executor_kinds(executor_kind)
    bench_models = as_models(SIM_DEFAULT_MODEL if models is None else models)
    check_concurrency(concurrency)
    selected = list(task_list) if task_list is not None else select_tasks(split, depth, limit)
    cells = make_cells(bench_models, profile_names, strategies_as_designs(names), depths, kinds,
                       env=TextCraft, base_config=base_config, settings={"seed": seed},
                       env_extra={} if prompts == "default" else {"prompts": prompts})
    libraries = (None if library is None else
                 {id(c): library if share_library else library.copy() for c in cells})
    ran = await run_grid(cells, selected, partial(_run_one, price=price, libraries=libraries,
                                                  learn=learn),
                         concurrency=concurrency, on_result=on_result)
    entries = [
        ExecutorBenchEntry(**aggregate(chunk, model=c.model.info(), strategy=c.strategy,
                                       d_max=c.d_max, profile=c.profile).model_dump(),
                           executor=c.executor)
        for c, chunk in zip(cells, ran.chunks(), strict=True)]
    counts = Counter(str(t.depth) for t in selected)
    return ExecutorBenchReport(
        split=split if task_list is None else "custom",
        depth=depth,
        limit=limit,
        seed=seed,
        concurrency=concurrency,
        strategies=names,
        profiles=profile_names,
        executors=kinds,
        prompts=prompts,
        d_max=depths,
        models=[m.info() for m in bench_models],
        simulated=any(m.simulated for m in bench_models),
        task_count=len(selected),
        tasks_by_depth=dict(sorted(counts.items(), key=lambda kv: int(kv[0]))),
        elapsed_seconds=ran.elapsed_seconds,
        entries=entries,
        results=ran.records,
    )


run_bench = synchronous(run_bench_async)


__all__ = [
    "BenchModel", "BenchReport", "ExecutorBenchEntry", "ExecutorBenchReport",
    "ExecutorTaskRecord", "TaskRecord", "parse_d_max", "parse_executor_kinds",
    "parse_profiles", "parse_strategies", "read_task_ids", "run_bench", "run_bench_async",
    "select_tasks",
]
