"""The one bench grid every environment's bench runs on.

A bench is a grid of *cells* (model x profile x design x d_max x executor kind), each run on
the same task selection. This module writes that once:

- the models one column runs with (:class:`BenchModel`) and the comma-separated option parsers
  every bench shares (``--strategies``, ``--profile``, ``--d-max``, ``--executors``);
- :func:`make_cells`: the cells in report order, each with its validated ``RunConfig`` (the
  profile fills in what the base config left unset) and the environment config it adds;
- :func:`run_grid`: every (cell, task) at most ``concurrency`` at once, ``on_result`` as each
  finishes, the records back in job order whatever the completion order, per cell;
- the aggregates every entry has (usage sums, statuses, errors, wall time) and the fields of a
  record that come straight from the engine's :class:`~adapt.engine.TaskResult`;
- what every record says about verification (:class:`ClaimRecord`, :func:`claim_fields`: the
  claim before the environment's final word, claim vs verdict of every task node, checkable
  sub-goals, executor calls per model) and what every entry sums from it (:func:`claim_sums`:
  self-assessed success, the checkable sub-goal share);
- :func:`progress`: the rich progress bar the commands show on stderr;
- :func:`synchronous`: the ``asyncio.run`` twin of an async entry point, with its signature.

An environment's bench keeps only what is its own: task selection, the per-task record, the
per-environment breakdown of an entry, and its report's rendering.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, TypeVar

from pydantic import BaseModel, Field

from adapt.engine import RunConfig, available_executors, available_strategies
from adapt.engine.config import D_MAX_RANGE, ResolvedConfig, executor_config
from adapt.engine.profiles import PROFILES
from adapt.engine.resolve import resolve_config
from adapt.errors import InvalidConfig
from adapt.llm.base import ChatModel
from adapt.llm.openai_compat.pool import closing_default_pool

if TYPE_CHECKING:
    from rich.console import Console

    from adapt.engine import MemorySink, TaskResult
    from adapt.engine.tree import UsageTotals

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")



class ModelInfo(BaseModel):
    """The model(s) of one benchmark column, as reports name them."""

    label: str
    executor: str
    planner: str
    simulated: bool


@dataclass(frozen=True)
class BenchModel:
    """The models one benchmark column runs with."""

    executor: ChatModel
    planner: ChatModel
    #: a model cascade (``executor.models``): every executor model in order, the first being
    #: ``executor``; empty: ``executor`` alone
    cascade: tuple[ChatModel, ...] = ()

    @property
    def executors(self) -> ChatModel | list[ChatModel]:
        """What ``run_task`` gets as the executor: the model, or the cascade."""
        return list(self.cascade) if len(self.cascade) > 1 else self.executor

    @property
    def executor_label(self) -> str:
        if len(self.cascade) > 1:
            return "cascade " + " > ".join(m.name for m in self.cascade)
        return self.executor.name

    @property
    def label(self) -> str:
        name = self.executor_label
        if self.planner is self.executor or self.planner.name == name:
            return name
        return f"{name} + planner {self.planner.name}"

    @property
    def simulated(self) -> bool:
        return bool(self.executor.simulated or self.planner.simulated
                    or any(m.simulated for m in self.cascade))

    def info(self) -> ModelInfo:
        return ModelInfo(label=self.label, executor=self.executor_label,
                         planner=self.planner.name, simulated=self.simulated)

    @classmethod
    def from_spec(cls, spec: str, planner_spec: str | None = None) -> BenchModel:
        """Load local models by spec (no settings: remote endpoints are refused)."""
        from adapt.llm.spec import load_model

        executor = load_model(spec)
        planner = executor if planner_spec in (None, spec) else load_model(planner_spec)
        return cls(executor, planner)


def as_models(models: Sequence[BenchModel | str] | BenchModel | str) -> list[BenchModel]:
    """One :class:`BenchModel` per entry (specs are loaded); none or a repeated label raise."""
    if isinstance(models, BenchModel | str):
        models = [models]
    out = [BenchModel.from_spec(m) if isinstance(m, str) else m for m in models]
    if not out:
        raise InvalidConfig("no models to benchmark")
    labels = [m.label for m in out]
    if len(set(labels)) != len(labels):
        raise InvalidConfig(f"the same model is given twice: {labels}")
    return out


# -- argument parsing -----------------------------------------------------------------------
def items(value: str | Sequence[str] | Sequence[int]) -> list[str]:
    """``"a, b"`` or ``["a", "b"]`` -> ``["a", "b"]`` (stripped, order kept)."""
    raw = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return [v.strip() for v in raw]


def parse_names(value: str | Sequence[str], known: Sequence[str], *, option: str,
                example: str, noun: tuple[str, str], listed_as: str = "available") -> list[str]:
    """Comma-separated names, each one of ``known`` (order kept, duplicates dropped); a clear
    ``InvalidConfig`` names ``option`` and lists the known names otherwise."""
    names = items(value)
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
    out: list[int] = []
    for item in items(str(value) if isinstance(value, int) else value):
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


def check_concurrency(concurrency: int) -> int:
    if concurrency < 1:
        raise InvalidConfig(f"--concurrency must be at least 1, got {concurrency}")
    return concurrency


def take_in_turn(groups: dict[Any, list[T]], limit: int) -> dict[Any, int]:
    """How many of each group ``limit`` picks when the groups take turns (in their order)."""
    quota = dict.fromkeys(groups, 0)
    left = min(limit, sum(len(g) for g in groups.values()))
    while left:
        for key, group in groups.items():
            if left and quota[key] < len(group):
                quota[key] += 1
                left -= 1
    return quota


# -- the grid ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Design:
    """What a bench compares: a name, the strategy it runs, and its executor kind (``None``:
    the bench's executor axis decides)."""

    name: str
    strategy: str
    executor: str | None = None


def strategies_as_designs(names: Sequence[str]) -> list[Design]:
    return [Design(n, n) for n in names]


@dataclass(frozen=True)
class Cell:
    """One column of the grid: what every task of the selection runs with."""

    model: BenchModel
    profile: str
    design: Design
    d_max: int
    executor: str
    #: the cell's resolved config (every task of the cell runs it as it is)
    config: ResolvedConfig
    #: environment config the profile (or the bench) adds to every task's
    env_extra: dict[str, Any] = field(default_factory=dict)

    @property
    def strategy(self) -> str:
        return self.design.strategy


def make_cells(models: Sequence[BenchModel], profiles: Sequence[str],
               designs: Sequence[Design], depths: Sequence[int], kinds: Sequence[str], *,
               env: object, base_config: RunConfig | None = None,
               env_extra: dict[str, Any] | None = None,
               settings: dict[str, Any] | None = None) -> list[Cell]:
    """Every (model, profile, design, d_max, executor kind) in that order, with its config:
    ``base_config`` plus the cell's choices plus ``settings`` (e.g. the seed), resolved for
    ``env`` (an environment class): the profile fills in what was left unset, and an executor
    setting the cell's kind does not take (``--act-only`` for stateact) is left out."""
    base = (base_config or RunConfig()).model_dump(exclude_unset=True)
    configs: dict[tuple[str, str, int, str], tuple[ResolvedConfig, dict[str, Any]]] = {}
    cells: list[Cell] = []
    for m in models:
        for p in profiles:
            for design in designs:
                for d in depths:
                    for k in kinds if design.executor is None else [design.executor]:
                        key = (p, design.strategy, d, k)
                        if key not in configs:
                            executor = executor_config({**base.get("executor", {}), "kind": k},
                                                       only_known=True)
                            chosen = RunConfig.model_validate(
                                {**base, "profile": p, "strategy": design.strategy, "d_max": d,
                                 **(settings or {}), "executor": executor})
                            resolved, extra = resolve_config(chosen, env, env_extra or {})
                            configs[key] = (resolved, dict(extra) if isinstance(extra, dict)
                                            else extra.model_dump(exclude_unset=True))
                        config, extra = configs[key]
                        cells.append(Cell(m, p, design, d, k, config, extra))
    return cells


@dataclass
class GridRun(Generic[R]):
    """The records of a grid run in job order (cell by cell, tasks in selection order)."""

    records: list[R]
    per_cell: int
    elapsed_seconds: float

    def chunks(self) -> Iterator[list[R]]:
        """The records of each cell, in cell order."""
        for i in range(0, len(self.records), self.per_cell):
            yield self.records[i : i + self.per_cell]


async def run_grid(cells: Sequence[Cell], tasks: Sequence[T],
                   run_one: Callable[[Cell, T], Awaitable[R]], *, concurrency: int,
                   on_result: Callable[[R], None] | None = None) -> GridRun[R]:
    """Run every (cell, task), at most ``concurrency`` at once; ``on_result`` as each ends."""
    if not tasks:
        raise InvalidConfig("no tasks selected")
    gate = asyncio.Semaphore(check_concurrency(concurrency))

    async def job(cell: Cell, task: T) -> R:
        async with gate:
            record = await run_one(cell, task)
        if on_result is not None:
            on_result(record)
        return record

    started = time.monotonic()
    # gather keeps the job order, whatever order the tasks finish in
    records = list(await asyncio.gather(*(job(c, t) for c in cells for t in tasks)))
    return GridRun(records, len(tasks), time.monotonic() - started)


def synchronous(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """``fn`` run to completion with ``asyncio.run`` (for callers outside an event loop); the
    loop's default model client pool is closed at the end."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(closing_default_pool(fn(*args, **kwargs)))

    run.__doc__ = f"The synchronous form of :func:`{fn.__name__}` (``asyncio.run``).\n\n" + (
        fn.__doc__ or "")
    return run


# -- records and aggregates ------------------------------------------------------------------
def result_fields(result: TaskResult) -> dict[str, Any]:
    """What every task record takes from the engine's result as it is."""
    return {"status": result.status, "reward": result.reward, "usage": result.usage,
            "wall_seconds": result.wall_seconds, "error": result.error}


def tree_fields(result: TaskResult) -> dict[str, Any]:
    """The tree's outcome, for records of benches that report decomposition."""
    return {"success": result.success, "max_depth": result.max_depth, "nodes": result.nodes,
            "usage_by_role": dict(sorted(result.usage_by_role.items()))}


class NodeCheck(BaseModel):
    """Claim vs verdict of one task node (``tasks.jsonl``, key ``node_checks``)."""

    id: int
    depth: int
    goal: str
    status: str
    claim: bool | None
    verdict: str | None
    evidence: str | None
    termination: str | None


class ClaimRecord(BaseModel):
    """What every bench's task record says about the claim and the environment's checks."""

    #: what the tree claimed before the environment's final word (None: not recorded)
    claimed_success: bool | None = None
    #: planner-made task nodes the environment checked / could decide (verification)
    checked_subgoals: int = 0
    checkable_subgoals: int = 0
    #: claim vs verdict of every task node that ran
    node_checks: list[NodeCheck] = Field(default_factory=list)
    #: executor calls per model (a model cascade's calls by stage)
    executor_calls_by_model: dict[str, int] = Field(default_factory=dict)

    @property
    def claimed(self) -> bool:
        """The self-assessed outcome (the claim before the environment's final check)."""
        return bool(self.claimed_success)


def node_checks(sink: MemorySink) -> list[NodeCheck]:
    """Claim vs verdict of every task node that ran, in id order."""
    return [NodeCheck(id=n.id, depth=n.depth, goal=n.goal, status=n.status, claim=n.claim,
                      verdict=n.verdict, evidence=n.evidence, termination=n.termination)
            for n in sorted(sink.nodes.values(), key=lambda n: n.id)
            if n.kind == "task" and n.status not in ("pending", "skipped")]


def calls_by_model(sink: MemorySink) -> dict[str, int]:
    """Executor calls per model (a cascade's cost by stage), in the order first called."""
    out: dict[str, int] = {}
    for call in sink.calls:
        if call.role == "executor":
            out[call.model] = out.get(call.model, 0) + 1
    return out


def claim_fields(result: TaskResult, sink: MemorySink) -> dict[str, Any]:
    """A :class:`ClaimRecord`'s fields from a run's result and the sink that recorded it."""
    return {"claimed_success": result.claimed_success,
            "checked_subgoals": result.checked_subgoals,
            "checkable_subgoals": result.checkable_subgoals,
            "node_checks": node_checks(sink), "executor_calls_by_model": calls_by_model(sink)}


def claim_sums(records: Sequence[ClaimRecord]) -> dict[str, Any]:
    """Self-assessed success (the claims) and the share of the checked sub-goals the
    environment could decide (None: none checked)."""
    checked = sum(r.checked_subgoals for r in records)
    return {"self_assessed_success_rate": rate(sum(r.claimed for r in records), len(records)),
            "checkable_subgoal_share": (sum(r.checkable_subgoals for r in records) / checked
                                        if checked else None)}


class _Run(Protocol):
    @property
    def usage(self) -> UsageTotals: ...
    @property
    def status(self) -> str: ...
    @property
    def wall_seconds(self) -> float: ...


def rate(n: float, d: float) -> float:
    return n / d if d else 0.0


def usage_sums(records: Sequence[_Run]) -> dict[str, Any]:
    """LLM calls, tokens and cost summed (cost ``None`` when any run's is unknown)."""
    cost: float | None = 0.0
    for r in records:
        cost = None if cost is None or r.usage.cost_usd is None else cost + r.usage.cost_usd
    return {"llm_calls": sum(r.usage.llm_calls for r in records),
            "prompt_tokens": sum(r.usage.prompt_tokens for r in records),
            "completion_tokens": sum(r.usage.completion_tokens for r in records),
            "cost_usd": cost}


def outcome_sums(records: Sequence[_Run]) -> dict[str, Any]:
    """Statuses counted, errors, and the summed task wall time."""
    return {"statuses": dict(sorted(Counter(r.status for r in records).items())),
            "errors": sum(r.status == "error" for r in records),
            "wall_seconds": sum(r.wall_seconds for r in records)}


# -- progress -----------------------------------------------------------------------------------
class _Solved(Protocol):
    @property
    def solved(self) -> bool: ...
    @property
    def usage(self) -> UsageTotals: ...


@contextmanager
def progress(label: str, total: int, console: Console, *, rate_column: bool = True,
             tokens: bool = False) -> Iterator[Callable[[_Solved], None]]:
    """A progress bar on ``console`` for ``total`` runs; yields the ``on_result`` callback
    (success so far, tokens so far with ``tokens``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns: list[Any] = [TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn()]
    if rate_column:
        columns.append(TextColumn("success {task.fields[rate]}"))
    if tokens:
        columns.append(TextColumn("tokens {task.fields[tokens]}"))
    bar = Progress(*columns, TimeElapsedColumn(), console=console)
    task = bar.add_task("bench", total=total, rate="–", tokens="0")
    seen = {"done": 0, "wins": 0, "tokens": 0}

    def on_result(record: _Solved) -> None:
        seen["done"] += 1
        seen["wins"] += record.solved
        seen["tokens"] += record.usage.total_tokens
        bar.update(task, advance=1, rate=f"{100 * seen['wins'] / seen['done']:.1f}%",
                   tokens=f"{seen['tokens']:,}")

    with bar:
        yield on_result


__all__ = [
    "BenchModel", "Cell", "ClaimRecord", "Design", "GridRun", "ModelInfo", "NodeCheck",
    "as_models", "calls_by_model", "claim_fields", "claim_sums", "make_cells", "node_checks",
    "outcome_sums",
    "parse_d_max", "parse_executor_kinds", "parse_names", "parse_profiles", "parse_strategies",
    "progress", "result_fields", "run_grid", "synchronous", "take_in_turn", "tree_fields",
    "usage_sums",
]
