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

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, get_args

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from adapt.bench.report import (
    BenchEntry,
    BenchReport,
    ModelInfo,
    NodeCheck,
    TaskRecord,
    aggregate,
)
from adapt.engine import (
    MemorySink,
    RunConfig,
    available_executors,
    available_strategies,
    run_task,
)
from adapt.engine.profiles import PROFILES, apply_profile
from adapt.engine.runtime import PriceFn
from adapt.envs.textcraft import TextCraft, TextCraftConfig
from adapt.envs.textcraft.tasks import Task, tasks
from adapt.errors import InvalidConfig
from adapt.llm.base import ChatModel
from adapt.settings import SIM_DEFAULT_MODEL

SPLITS = ("dev", "test", "all")
DEFAULT_STRATEGIES = ("adapt", "react")
DEFAULT_D_MAX = (4,)  # the paper's TextCraft setting
DEFAULT_EXECUTOR = "react"
D_MAX_RANGE = (1, 8)  # RunConfig.d_max bounds
#: the TextCraft prompt sets (``TextCraftConfig.prompts``; ``small`` suits small local models)
PROMPT_SETS: tuple[str, ...] = get_args(TextCraftConfig.model_fields["prompts"].annotation)

ResultCallback = Callable[[TaskRecord], None]


class ExecutorTaskRecord(TaskRecord):
    """A task record that names the executor design it ran with."""

    executor: str = DEFAULT_EXECUTOR


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


@dataclass(frozen=True)
class BenchModel:
    """The models one benchmark column runs with."""

    executor: ChatModel
    planner: ChatModel

    @property
    def label(self) -> str:
        if self.planner is self.executor or self.planner.name == self.executor.name:
            return self.executor.name
        return f"{self.executor.name} + planner {self.planner.name}"

    @property
    def simulated(self) -> bool:
        return bool(self.executor.simulated or self.planner.simulated)

    def info(self) -> ModelInfo:
        return ModelInfo(label=self.label, executor=self.executor.name,
                         planner=self.planner.name, simulated=self.simulated)

    @classmethod
    def from_spec(cls, spec: str, planner_spec: str | None = None) -> BenchModel:
        """Load local models by spec (no settings: remote endpoints are refused)."""
        from adapt.llm.spec import load_model

        executor = load_model(spec)
        planner = executor if planner_spec in (None, spec) else load_model(planner_spec)
        return cls(executor, planner)


# -- argument parsing -----------------------------------------------------------------------
def _items(value: str | Sequence[str] | Sequence[int]) -> list[str]:
    raw = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return [v.strip() for v in raw]


def parse_names(value: str | Sequence[str], known: Sequence[str], *, option: str,
                example: str, noun: tuple[str, str], listed_as: str = "available") -> list[str]:
    """Comma-separated names, each one of ``known`` (order kept, duplicates dropped); a clear
    ``InvalidConfig`` names ``option`` and lists the known names otherwise."""
    names = _items(value)
    listing = ", ".join(known)
    if not names or any(not n for n in names):
        raise InvalidConfig(f"{option}: give comma-separated names, e.g. {example} "
                            f"(got {value!r}); {listed_as}: {listing}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidConfig(f"unknown {noun[0] if len(unknown) == 1 else noun[1]} "
                            f"{', '.join(map(repr, unknown))}; {listed_as}: {listing}")
    return list(dict.fromkeys(names))


def parse_strategies(value: str | Sequence[str]) -> list[str]:
    """``"adapt,react"`` -> ``["adapt", "react"]``; unknown names raise listing the available."""
    return parse_names(value, available_strategies(), option="--strategies",
                       example="adapt,react", noun=("strategy", "strategies"))


def parse_executor_kinds(value: str | Sequence[str]) -> list[str]:
    """``"react,stateact"`` -> ``["react", "stateact"]``; unknown kinds raise listing the known."""
    return parse_names(value, available_executors(), option="--executors", example="react,stateact",
                       noun=("executor kind", "executor kinds"), listed_as="known")


def parse_profiles(value: str | Sequence[str]) -> list[str]:
    """``"default,paper"`` -> ``["default", "paper"]``; unknown names raise listing the known."""
    return parse_names(value, PROFILES, option="--profile", example="default,paper",
                       noun=("profile", "profiles"), listed_as="known")


def parse_d_max(value: str | int | Sequence[int]) -> list[int]:
    """``"4"`` or ``"1,2,3,4"`` -> sorted, de-duplicated depths within 1..8."""
    lo, hi = D_MAX_RANGE
    items = _items(str(value) if isinstance(value, int) else value)
    out: list[int] = []
    for item in items:
        try:
            d = int(item)
        except ValueError:
            raise InvalidConfig(f"--d-max: {item!r} is not an integer; give a depth such as 4 "
                                f"or a list such as 1,2,3,4 (each {lo}..{hi})") from None
        if not lo <= d <= hi:
            raise InvalidConfig(f"--d-max: {d} is out of range; each depth must be {lo}..{hi}")
        out.append(d)
    if not out:
        raise InvalidConfig("--d-max: give a depth such as 4 or a list such as 1,2,3,4")
    return sorted(set(out))


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
    quota = dict.fromkeys(groups, 0)
    left = limit
    while left:
        for d in sorted(groups):
            if left and quota[d] < len(groups[d]):
                quota[d] += 1
                left -= 1
    return [t for d in sorted(groups) for t in _spread(groups[d], quota[d])]


# -- running ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Job:
    model: BenchModel
    strategy: str
    d_max: int
    executor: str
    task: Task
    profile: str = "default"


async def _run_one(job: _Job, config: RunConfig, price: PriceFn | None,
                   env_extra: dict[str, Any]) -> ExecutorTaskRecord:
    env = TextCraft()
    sink = MemorySink()
    try:
        result = await run_task(env, {**job.task.config, **env_extra}, config,
                                job.model.executor, job.model.planner, price=price, sink=sink)
    finally:
        env.close()
    return ExecutorTaskRecord(
        id=job.task.id, item=job.task.item, depth=job.task.depth, strategy=job.strategy,
        profile=job.profile, model=job.model.label, d_max=job.d_max, status=result.status, reward=result.reward,
        success=result.success, max_depth=result.max_depth, nodes=result.nodes,
        usage=result.usage, usage_by_role=dict(sorted(result.usage_by_role.items())),
        wall_seconds=result.wall_seconds, error=result.error, executor=job.executor,
        monitor=result.monitor, claimed_success=result.claimed_success,
        checked_subgoals=result.checked_subgoals, checkable_subgoals=result.checkable_subgoals,
        node_checks=node_checks(sink),
    )


def node_checks(sink: MemorySink) -> list[NodeCheck]:
    """Claim vs verdict of every task node that ran, in id order."""
    return [NodeCheck(id=n.id, depth=n.depth, goal=n.goal, status=n.status, claim=n.claim,
                      verdict=n.verdict, evidence=n.evidence, termination=n.termination)
            for n in sorted(sink.nodes.values(), key=lambda n: n.id)
            if n.kind == "task" and n.status not in ("pending", "skipped")]


def _as_models(models: Sequence[BenchModel | str] | BenchModel | str | None) -> list[BenchModel]:
    if models is None:
        models = [SIM_DEFAULT_MODEL]
    if isinstance(models, BenchModel | str):
        models = [models]
    out = [BenchModel.from_spec(m) if isinstance(m, str) else m for m in models]
    if not out:
        raise InvalidConfig("no models to benchmark")
    labels = [m.label for m in out]
    if len(set(labels)) != len(labels):
        raise InvalidConfig(f"the same model is given twice: {labels}")
    return out


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
) -> ExecutorBenchReport:
    """Run every (model, profile, strategy, d_max, executor, task) and aggregate; see
    :func:`run_bench`."""
    names = parse_strategies(strategies)
    profile_names = parse_profiles(profiles)
    if prompts not in PROMPT_SETS:
        raise InvalidConfig(f"unknown prompt set {prompts!r}; use one of: "
                            f"{', '.join(PROMPT_SETS)}")
    env_extra: dict[str, Any] = {} if prompts == "default" else {"prompts": prompts}
    depths = parse_d_max(d_max)
    kinds = parse_executor_kinds(executor_kind)
    bench_models = _as_models(models)
    if concurrency < 1:
        raise InvalidConfig(f"--concurrency must be at least 1, got {concurrency}")
    selected = list(task_list) if task_list is not None else select_tasks(split, depth, limit)
    if not selected:
        raise InvalidConfig("no tasks selected")
    base = base_config or RunConfig()

    jobs = [_Job(m, s, d, k, t, p) for m in bench_models for p in profile_names for s in names
            for d in depths for k in kinds for t in selected]
    configs: dict[tuple[str, str, int, str], RunConfig] = {}
    env_extras: dict[str, dict[str, Any]] = {}
    base_data = base.model_dump(exclude_unset=True)
    for p in profile_names:
        for k in kinds:
            # the profile fills in what the base config (the command line) left unset
            chosen = RunConfig.model_validate(
                {**base_data, "profile": p,
                 "executor": {**base_data.get("executor", {}), "kind": k}})
            with_profile, env_extras[p] = apply_profile(chosen, TextCraft, env_extra)
            data = with_profile.model_dump(exclude_unset=True)
            for s in names:
                for d in depths:
                    configs[p, s, d, k] = RunConfig.model_validate(
                        {**data, "strategy": s, "d_max": d, "seed": seed})
    gate = asyncio.Semaphore(concurrency)

    async def run(job: _Job) -> ExecutorTaskRecord:
        async with gate:
            record = await _run_one(
                job, configs[job.profile, job.strategy, job.d_max, job.executor], price,
                env_extras[job.profile])
        if on_result is not None:
            on_result(record)
        return record

    started = time.monotonic()
    # gather keeps the job order, whatever order the tasks finish in
    records = list(await asyncio.gather(*(run(j) for j in jobs)))
    elapsed = time.monotonic() - started

    n = len(selected)
    combos = product(bench_models, profile_names, names, depths, kinds)  # the jobs' order
    entries = [
        ExecutorBenchEntry(**aggregate(records[i * n : (i + 1) * n], model=m.info(), strategy=s,
                                       d_max=d, profile=p).model_dump(), executor=k)
        for i, (m, p, s, d, k) in enumerate(combos)]

    counts: dict[str, int] = {}
    for t in selected:
        counts[str(t.depth)] = counts.get(str(t.depth), 0) + 1
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
        elapsed_seconds=elapsed,
        entries=entries,
        results=records,
    )


def run_bench(
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

    Raises :class:`~adapt.errors.UserError` for unknown strategies, bad d_max values, an
    unknown split or an empty selection, before anything runs.
    """
    return asyncio.run(run_bench_async(
        split=split, depth=depth, limit=limit, strategies=strategies, d_max=d_max,
        models=models, concurrency=concurrency, seed=seed, base_config=base_config,
        price=price, task_list=task_list, on_result=on_result, executor_kind=executor_kind,
        prompts=prompts, profiles=profiles,
    ))


__all__ = [
    "BenchModel", "BenchReport", "ExecutorBenchEntry", "ExecutorBenchReport",
    "ExecutorTaskRecord", "TaskRecord", "parse_d_max", "parse_executor_kinds",
    "parse_profiles", "parse_strategies", "run_bench", "run_bench_async", "select_tasks",
]
