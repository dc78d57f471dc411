"""Benchmark reports: per-task records, per-(strategy, model, d_max) aggregates, and renderings
(rich table for the terminal, Markdown, JSON, ``tasks.jsonl``).

Rates are fractions in ``[0, 1]`` in JSON and percentages in tables. "Success" is the
environment's verdict (reward > 0); "self-assessed" is the controller's verdict
(``TaskResult.success``). ``k_max`` (paper, table 7) is the mean, over the tasks that succeeded,
of the deepest task node that ran (``TaskResult.max_depth``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from adapt.engine.tree import MonitorTotals, UsageTotals
from adapt.eval.grid import (
    ClaimRecord,
    ModelInfo,
    claim_sums,
    outcome_sums,
    rate,
    usage_sums,
)

#: keys of the JSON entries that vary from run to run (wall-clock time)
TIMING_KEYS = frozenset({"wall_seconds", "elapsed_seconds", "mean_task_seconds"})


class TaskRecord(ClaimRecord):
    """One task run: a line of ``tasks.jsonl``."""

    id: str
    item: str
    depth: int
    strategy: str
    #: the profile that ran: ``default`` or ``paper`` (the published protocols)
    profile: str = "default"
    model: str
    d_max: int
    status: str
    reward: float
    success: bool
    max_depth: int
    nodes: int
    usage: UsageTotals
    usage_by_role: dict[str, UsageTotals] = Field(default_factory=dict)
    wall_seconds: float
    error: str | None = None
    #: what the decoding monitor did in this run (validations, violations, corrections)
    monitor: MonitorTotals = Field(default_factory=MonitorTotals)

    @property
    def claimed(self) -> bool:
        """The self-assessed outcome (the claim before the environment's final check)."""
        return self.success if self.claimed_success is None else self.claimed_success

    @property
    def solved(self) -> bool:
        """The environment's verdict."""
        return self.reward > 0


class DepthStats(BaseModel):
    tasks: int
    successes: int
    success_rate: float
    self_assessed_success_rate: float
    #: mean decomposition depth used among successes (None: no success)
    k_max: float | None


class EntryBase(BaseModel):
    """What every environment's bench aggregates for one (strategy, model, d_max)."""

    strategy: str
    #: ``default`` or ``paper`` (the published protocols)
    profile: str = "default"
    model: str
    simulated: bool
    d_max: int
    tasks: int
    successes: int
    success_rate: float
    self_assessed_success_rate: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    #: summed task wall time (tasks overlap when run concurrently)
    wall_seconds: float
    mean_task_seconds: float
    statuses: dict[str, int]
    errors: int
    #: share of the planner's sub-goals the environment could decide (None: none checked)
    checkable_subgoal_share: float | None = None


class BenchEntry(EntryBase):
    """Aggregates for one (strategy, model, d_max) on TextCraft."""

    executor_model: str
    planner_model: str
    by_depth: dict[str, DepthStats]
    k_max: float | None
    k_max_by_depth: dict[str, float | None]
    executor_calls: int
    planner_calls: int
    calls_by_role: dict[str, int]
    #: executor calls per model: with a model cascade, how often each stage ran
    executor_calls_by_model: dict[str, int] = Field(default_factory=dict)


class ReportBase(BaseModel):
    """What every environment's bench report says about the run."""

    environment: str
    split: str
    limit: int | None = None
    seed: int | None = None
    concurrency: int
    strategies: list[str]
    #: the profiles compared (``default``, ``paper``)
    profiles: list[str] = Field(default_factory=lambda: ["default"])
    d_max: list[int]
    models: list[ModelInfo]
    simulated: bool
    task_count: int
    elapsed_seconds: float


class BenchReport(ReportBase):
    environment: str = "textcraft"
    depth: int | None = None
    tasks_by_depth: dict[str, int]
    entries: list[BenchEntry]
    #: every task run, sorted (model, strategy, d_max, task); written to tasks.jsonl
    results: list[TaskRecord] = Field(default_factory=list, exclude=True)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2) + "\n"

    def comparable(self) -> dict[str, Any]:
        """The report and the per-task results without wall-clock times (equal run to run with
        the simulated model and the same seed)."""
        data: dict[str, Any] = _strip_timing(self.model_dump(mode="json"))
        data["results"] = [_strip_timing(r.model_dump(mode="json")) for r in self.results]
        return data


def _strip_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_strip_timing(v) for v in value]
    return value


# -- aggregation ----------------------------------------------------------------------------
_rate = rate


def _mean(values: Sequence[int]) -> float | None:
    return sum(values) / len(values) if values else None


def _depth_stats(records: Sequence[TaskRecord]) -> DepthStats:
    wins = [r for r in records if r.solved]
    return DepthStats(
        tasks=len(records),
        successes=len(wins),
        success_rate=_rate(len(wins), len(records)),
        self_assessed_success_rate=_rate(sum(r.claimed for r in records), len(records)),
        k_max=_mean([r.max_depth for r in wins]),
    )


def aggregate(
    records: Sequence[TaskRecord], *, model: ModelInfo, strategy: str, d_max: int,
    profile: str = "default",
) -> BenchEntry:
    """The entry for one (strategy, model, d_max) from its task records."""
    overall = _depth_stats(records)
    by_depth = {
        str(depth): _depth_stats([r for r in records if r.depth == depth])
        for depth in sorted({r.depth for r in records})
    }
    calls: Counter[str] = Counter()
    by_model: Counter[str] = Counter()
    for r in records:
        for role, usage in r.usage_by_role.items():
            calls[role] += usage.llm_calls
        by_model.update(r.executor_calls_by_model)
    sums = {**usage_sums(records), **outcome_sums(records)}
    return BenchEntry(
        checkable_subgoal_share=claim_sums(records)["checkable_subgoal_share"],
        strategy=strategy,
        profile=profile,
        model=model.label,
        executor_model=model.executor,
        planner_model=model.planner,
        simulated=model.simulated,
        d_max=d_max,
        tasks=overall.tasks,
        successes=overall.successes,
        success_rate=overall.success_rate,
        self_assessed_success_rate=overall.self_assessed_success_rate,
        by_depth=by_depth,
        k_max=overall.k_max,
        k_max_by_depth={k: v.k_max for k, v in by_depth.items()},
        executor_calls=calls.get("executor", 0),
        planner_calls=calls.get("planner", 0),
        calls_by_role=dict(sorted(calls.items())),
        executor_calls_by_model=dict(by_model),
        mean_task_seconds=sums["wall_seconds"] / len(records) if records else 0.0,
        **sums,
    )


# -- rendering --------------------------------------------------------------------------------
def _pct(rate: float) -> str:
    return f"{100 * rate:.1f}%"


def _k(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _cost(value: float | None, simulated: bool) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" + (" (sim)" if simulated else "")


def _depths(report: BenchReport) -> list[str]:
    return sorted({d for e in report.entries for d in e.by_depth}, key=int)


def model_label(info: ModelInfo | BenchEntry) -> str:
    label = info.label if isinstance(info, ModelInfo) else info.model
    return f"{label} (SIMULATED)" if info.simulated else label


def _num(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def table_rows(report: BenchReport, *, with_model: bool = True,
               compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the side-by-side table (``compact``: the terminal's narrower form)."""
    depths = _depths(report)
    n = report.tasks_by_depth
    if compact:
        headers = ["strategy", "profile", *(["model"] if with_model else []), "d_max", "tasks",
                   "success", "self-assessed", *(f"depth {d} (n={n.get(d, 0)})" for d in depths),
                   "k_max", "LLM calls = exec/plan", "tokens prompt/compl", "cost", "wall s"]
    else:
        headers = ["strategy", "profile", *(["model"] if with_model else []), "d_max", "tasks",
                   "success (reward)", "self-assessed",
                   *(f"depth {d}: success · k_max" for d in depths),
                   "k_max", "LLM calls", "executor calls", "planner calls",
                   "prompt tokens", "completion tokens", "cost", "wall s"]
    rows: list[list[str]] = []
    several_executors = len(getattr(report, "executors", ["react"])) > 1
    for e in report.entries:
        name = e.strategy
        if several_executors:  # e.g. "adapt · stateact" when executor designs are compared
            name = f"{e.strategy} · {getattr(e, 'executor', 'react')}"
        cells = [name, e.profile, *([model_label(e)] if with_model else []), str(e.d_max),
                 str(e.tasks), f"{_pct(e.success_rate)} ({e.successes})",
                 _pct(e.self_assessed_success_rate)]
        for d in depths:
            s = e.by_depth.get(d)
            if s is None:
                cells.append("–")
            elif compact:
                cells.append(f"{_pct(s.success_rate)} k={_k(s.k_max)}")
            else:
                cells.append(f"{_pct(s.success_rate)} ({s.successes}/{s.tasks}) · {_k(s.k_max)}")
        if compact:
            other = "".join(f" +{n} {role}" for role, n in e.calls_by_role.items()
                            if role not in ("executor", "planner"))
            cells += [_k(e.k_max), f"{e.llm_calls} = {e.executor_calls}/{e.planner_calls}{other}",
                      f"{_num(e.prompt_tokens)}/{_num(e.completion_tokens)}",
                      _cost(e.cost_usd, False), f"{e.wall_seconds:.2f}"]
        else:
            cells += [_k(e.k_max), str(e.llm_calls), str(e.executor_calls),
                      str(e.planner_calls), str(e.prompt_tokens), str(e.completion_tokens),
                      _cost(e.cost_usd, e.simulated), f"{e.wall_seconds:.2f}"]
        rows.append(cells)
    return headers, rows


def run_errors(entries: Iterable[Any]) -> list[str]:
    """The note on task runs that ended with an error, if any did."""
    errors = sum(e.errors for e in entries)
    return [f"{errors} task run(s) ended with an error (see tasks.jsonl)"] if errors else []


def limited(selection: str, limit: int | None) -> str:
    """A title's selection, with `` (limit N)`` when a limit was given."""
    return selection if limit is None else f"{selection} (limit {limit})"


def title(report: BenchReport) -> str:
    sel = f"split {report.split}"
    if report.depth is not None:
        sel += f", recipe depth {report.depth}"
    sel = limited(f"{sel}, {report.task_count} tasks", report.limit)
    prompts = getattr(report, "prompts", "default")
    if prompts != "default":
        sel += f", {prompts} prompts"
    return f"TextCraft benchmark — {sel}, seed {report.seed}"


def notes(report: BenchReport) -> list[str]:
    out = ["success = environment reward > 0; self-assessed = the controller's verdict; "
           "k_max = mean deepest task node among successes (paper table 7); wall s = summed "
           f"task time (elapsed {report.elapsed_seconds:.2f} s at concurrency "
           f"{report.concurrency})"]
    if report.simulated:
        out.append("SIMULATED model(s): numbers come from the offline simulator, not an LLM")
    return [*out, *run_errors(report.entries)]


def print_table(report: BenchReport, console: Console) -> None:
    """Print :func:`render_table`; not on a terminal (a pipe, a file), at its natural width
    instead of squeezed into 80 columns."""
    print_wide(render_table(report),
               ["depth columns: success rate by environment reward, k=k_max", *notes(report)],
               console)


def print_wide(table: Table, notes_lines: Sequence[str], console: Console) -> None:
    """``table`` then the notes, dimmed; off a terminal (a pipe, a file) at the table's natural
    width instead of squeezed into 80 columns."""
    if not console.is_terminal:
        wide = Console(file=console.file, width=10_000, color_system=None)
        width = Measurement.get(wide, wide.options, table).maximum
        console = Console(file=console.file, width=max(console.width, width), color_system=None)
    console.print(table)
    for note in notes_lines:
        console.print(note, style="dim", highlight=False)


def rich_table(title_line: str, headers: Sequence[str], rows: Sequence[Sequence[str]], *,
               left: Sequence[str]) -> Table:
    """A rich table (``left`` columns left-aligned, the others right-aligned)."""
    table = Table(title=title_line, title_justify="left")
    for h in headers:
        table.add_column(h, justify="left" if h in left else "right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def render_table(report: BenchReport) -> Table:
    """The rich table for the terminal (the model goes in the title when there is one)."""
    one_model = len(report.models) == 1
    headers, rows = table_rows(report, with_model=not one_model, compact=True)
    caption = title(report)
    if one_model:
        caption += f"\nmodel: {model_label(report.models[0])}"
    return rich_table(caption, headers, rows, left=("strategy", "profile", "model"))


def markdown_table(title_line: str, headers: Sequence[str], rows: Sequence[Sequence[str]],
                   notes_lines: Sequence[str], *, left: Sequence[str]) -> str:
    """A Markdown document: title, table (``left`` columns left-aligned), notes as a list."""

    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"# {title_line}", "", line(headers),
           line(":---" if h in left else "---:" for h in headers)]
    out += [line(r) for r in rows]
    out += [""] + [f"- {n}" for n in notes_lines] + [""]
    return "\n".join(out)


def to_markdown(report: BenchReport) -> str:
    headers, rows = table_rows(report)
    return markdown_table(title(report), headers, rows, notes(report),
                          left=("strategy", "profile", "model"))


def write_outputs(out_dir: Path, *, report_json: str, markdown: str,
                  records: Iterable[BaseModel]) -> list[Path]:
    """Write ``report.json``, ``report.md`` and ``tasks.jsonl`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "report.json", out_dir / "report.md", out_dir / "tasks.jsonl"]
    paths[0].write_text(report_json, encoding="utf-8")
    paths[1].write_text(markdown, encoding="utf-8")
    paths[2].write_text(
        "".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in records), encoding="utf-8")
    return paths


def write_report(report: BenchReport, out_dir: Path) -> list[Path]:
    """Write ``report.json``, ``report.md`` and ``tasks.jsonl`` into ``out_dir``."""
    return write_outputs(out_dir, report_json=report.to_json(), markdown=to_markdown(report),
                         records=report.results)
