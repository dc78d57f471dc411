"""``adapt bench monitor``: what the decoding monitor saves on noisy model output.

The simulated TextCraft model is made noisy with its ``format_error_rate`` knob (two actions on
one executor line, a stray ``> ``, a plan without ``Execution Order:``, a step without its
``Step N:`` label). Each strategy runs on the same tasks with the monitor on and off; the table
shows success, nodes and LLM calls per task, and the violations the monitor found and
corrected. "nodes saved" is the drop in nodes per task from off to on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from adapt.engine import RunConfig
from adapt.errors import InvalidConfig
from adapt.eval.report import TaskRecord, markdown_table
from adapt.eval.textcraft import parse_strategies, run_bench_async, select_tasks

DEFAULT_RATES = (0.0, 0.1, 0.2, 0.3)
DEFAULT_SIM = "sim:textcraft?capability=1&error_rate=0.1&seed=7"


class MonitorRow(BaseModel):
    strategy: str
    d_max: int
    format_error_rate: float
    monitor: bool
    tasks: int
    successes: int
    success_rate: float
    nodes_per_task: float
    calls_per_task: float
    violations: int
    corrections: int


class MonitorBench(BaseModel):
    model: str
    split: str
    task_count: int
    d_max: int
    rows: list[MonitorRow] = Field(default_factory=list)
    elapsed_seconds: float = 0.0

    def nodes_saved(self, strategy: str, rate: float) -> float | None:
        by = {r.monitor: r for r in self.rows
              if r.strategy == strategy and r.format_error_rate == rate}
        if True not in by or False not in by:
            return None
        return by[False].nodes_per_task - by[True].nodes_per_task


def parse_rates(value: str | Sequence[float]) -> list[float]:
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    rates: list[float] = []
    for item in items:
        try:
            rate = float(item)
        except ValueError:
            raise InvalidConfig(f"--format-error-rates takes numbers in [0, 1] separated by "
                                f"commas, e.g. 0,0.1,0.2; got {item!r}") from None
        if not 0.0 <= rate <= 1.0:
            raise InvalidConfig(f"a format error rate is in [0, 1], got {rate}")
        rates.append(rate)
    if not rates:
        raise InvalidConfig("--format-error-rates is empty")
    return rates


def noisy_spec(model: str, rate: float) -> str:
    """``model`` (a ``sim:textcraft`` spec) with ``format_error_rate`` set to ``rate``."""
    if not model.startswith("sim:textcraft"):
        raise InvalidConfig("the monitor bench makes the SIMULATED model noisy: --model must be "
                            f"a sim:textcraft spec, got {model!r}")
    base, _, query = model.partition("?")
    knobs = [kv for kv in query.split("&") if kv and not kv.startswith("format_error_rate=")]
    return base + "?" + "&".join([*knobs, f"format_error_rate={rate:g}"])


def _row(records: Sequence[TaskRecord], strategy: str, d_max: int, rate: float,
         monitor: bool) -> MonitorRow:
    n = len(records)
    successes = sum(1 for r in records if r.solved)
    return MonitorRow(
        strategy=strategy, d_max=d_max, format_error_rate=rate, monitor=monitor, tasks=n,
        successes=successes, success_rate=successes / n if n else 0.0,
        nodes_per_task=sum(r.nodes for r in records) / n if n else 0.0,
        calls_per_task=sum(r.usage.llm_calls for r in records) / n if n else 0.0,
        violations=sum(r.monitor.violations for r in records),
        corrections=sum(r.monitor.corrections for r in records),
    )


async def run_monitor_bench(
    *,
    model: str = DEFAULT_SIM,
    rates: str | Sequence[float] = DEFAULT_RATES,
    strategies: str | Sequence[str] = "adapt",
    d_max: int = 4,
    split: str = "test",
    limit: int | None = None,
    concurrency: int = 8,
    on_result: Callable[[TaskRecord], None] | None = None,
) -> MonitorBench:
    import time

    names = parse_strategies(strategies)
    rate_list = parse_rates(rates)
    tasks = select_tasks(split, None, limit)
    bench = MonitorBench(model=model, split=split, task_count=len(tasks), d_max=d_max)
    started = time.monotonic()
    for rate in rate_list:
        for enabled in (False, True):
            config = RunConfig.model_validate({"monitor": {"enabled": enabled}})
            report = await run_bench_async(
                split=split, strategies=names, d_max=[d_max], models=noisy_spec(model, rate),
                concurrency=concurrency, base_config=config, task_list=tasks,
                on_result=on_result)
            for name in names:
                records = [r for r in report.results if r.strategy == name]
                bench.rows.append(_row(records, name, d_max, rate, enabled))
    bench.elapsed_seconds = time.monotonic() - started
    return bench


def table(bench: MonitorBench) -> tuple[list[str], list[list[str]]]:
    headers = ["strategy", "format errors", "monitor", "success", "nodes/task",
               "calls/task", "violations", "corrected", "nodes saved"]
    rows: list[list[str]] = []
    for r in bench.rows:
        saved = bench.nodes_saved(r.strategy, r.format_error_rate) if r.monitor else None
        rows.append([
            r.strategy, f"{r.format_error_rate:.0%}", "on" if r.monitor else "off",
            f"{r.success_rate:.1%}", f"{r.nodes_per_task:.2f}",
            f"{r.calls_per_task:.1f}", str(r.violations), str(r.corrections),
            "" if saved is None else f"{saved:.2f}",
        ])
    return headers, rows


def to_markdown(bench: MonitorBench) -> str:
    headers, rows = table(bench)
    notes = [
        f"model: {bench.model} with format_error_rate set per row; {bench.task_count} "
        f"{bench.split} tasks; d_max {bench.d_max}; {bench.elapsed_seconds:.0f} s",
        "nodes saved: nodes per task with the monitor off minus with it on",
    ]
    return markdown_table("Decoding monitor: nodes saved on noisy output", headers, rows, notes,
                          left=("strategy",))
