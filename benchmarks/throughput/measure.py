"""Throughput benchmark, the measurement: many concurrent tasks (TextCraft by default; the
workloads: :mod:`benchmarks.throughput.workloads`) against a slow (simulated) LLM, and the
numbers read back from the database. The command, which starts the
worker it measures, is this package's ``__main__``:

    python -m benchmarks.throughput [--tasks 200] [--latency 1.0] [--mode worker|inprocess]
                                       [--database-url URL] [--broker-url URL] [--processes 1]
                                       [--steady SECONDS] [--workload textcraft|tools|mcp]

Each task makes its LLM calls one after another, so with every task running at once the ideal
LLM-call throughput is ``concurrency / latency``; :func:`measure` reports how close the run
came over the window in which every task is in its call loop (from the moment each has had its
first answer until the first one finishes), with the per-call stretch (the call latency the
worker saw / the model's) and the CPU time per LLM call of each party, on separate lines: the
worker process, the PostgreSQL backends serving it, and this driver (its own process and its
backends: dispatching and polling), so that the figure a user reads is the whole cost.

That window lasts a few seconds. :func:`measure_steady` (``--steady SECONDS``) keeps
``tasks`` tasks running instead, a new one queued as each finishes, and measures a window of
that length once every first task has answered: efficiency not read off a few seconds.

Figures measured while other work shares the machine (the load is printed) are indicative.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store import task_rows
from adapt.store.models import FINAL_STATUSES, LLMCallRow, Task, utcnow
from benchmarks.perfkit import Figure, load_avg, table
from benchmarks.throughput.cpu import BackendCPU, children_cpu, process_cpu
from benchmarks.throughput.workloads import SIM_SPEC as SIM_SPEC  # where callers find it
from benchmarks.throughput.workloads import TEXTCRAFT, Workload

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"


async def insert_tasks(
    sessions: async_sessionmaker[AsyncSession], n: int, model: str, first_seed: int = 0,
    workload: Workload = TEXTCRAFT,
) -> list[str]:
    """``n`` queued tasks of ``workload`` (seeds ``first_seed``..) for ``model``."""
    rc = workload.run_config
    ids = [task_rows.new_id() for _ in range(n)]
    async with sessions.begin() as session:
        session.add_all(Task(
            id=task_id, tenant="bench", status="queued", environment=workload.environment,
            environment_config=workload.config(seed), strategy=rc.strategy, d_max=rc.d_max,
            run_config=rc.model_dump(mode="json"), executor_model=model, planner_model=model,
            executor_simulated=True, planner_simulated=True,
        ) for seed, task_id in enumerate(ids, first_seed))
    return ids


#: tasks run before the measured ones, so that the process's one-time start-up work (imports,
#: the first connections, the recipe book) is not counted per call
WARMUP_TASKS = 4


async def warm_up(sessions: async_sessionmaker[AsyncSession], dispatch: Any, model: str,
                  timeout: float, workload: Workload = TEXTCRAFT) -> None:
    """Run :data:`WARMUP_TASKS` tasks; ``RuntimeError`` (with their errors) if none
    succeeded: the run would measure tasks that cannot work (e.g. a server not installed)."""
    ids = await insert_tasks(sessions, WARMUP_TASKS, model, first_seed=10_000,
                             workload=workload)
    for task_id in ids:
        await dispatch(task_id)
    rows = await wait_all(sessions, ids, timeout)
    if not any(r.status == "succeeded" for r in rows):
        errors = sorted({f"{r.status}: {r.error}" for r in rows})
        raise RuntimeError(f"no {workload.name} warm-up task succeeded: {errors[:3]}")


async def wait_all(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], timeout: float
) -> list[Task]:
    deadline = time.monotonic() + timeout
    while True:
        async with sessions() as session:
            done = (await session.execute(
                select(func.count()).select_from(Task)
                .where(Task.id.in_(ids), Task.status.in_(FINAL_STATUSES)))).scalar_one()
        if done == len(ids):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {done}/{len(ids)} tasks finished in {timeout:.0f}s")
        await asyncio.sleep(0.2)
    async with sessions() as session:
        return list((await session.execute(select(Task).where(Task.id.in_(ids)))).scalars())


def call_rate(answers: dict[str, list[datetime]], after: datetime, until: datetime) -> float:
    """Calls per second in [after, until], summed over the tasks, from each task's answer
    times (all of them, not only those in the window). A task's calls follow one another, so
    each interval between two consecutive answers is one call; it counts for the fraction of
    its length inside the window. A task that is running but answers fewer than twice inside a
    short window still counts by the intervals that overlap it; counting the answers inside the
    window is off by up to one call per task at each edge."""
    window = (until - after).total_seconds()
    if window <= 0:
        return float("nan")
    calls = 0.0
    for times in answers.values():
        ordered = sorted(times)
        for start, end in itertools.pairwise(ordered):
            length = (end - start).total_seconds()
            if length <= 0:  # two answers at the same instant: the later one, where it falls
                if after <= end <= until:
                    calls += 1
                continue
            overlap = (min(end, until) - max(start, after)).total_seconds()
            if overlap > 0:
                calls += overlap / length
    return calls / window


async def _calls_between(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], after: datetime,
    until: datetime,
) -> tuple[float, float]:
    """The call rate in [after, until] (:func:`call_rate`) and the mean latency, as the client
    saw it, of the calls answered in the window."""
    async with sessions() as session:
        rows = (await session.execute(
            select(LLMCallRow.task_id, LLMCallRow.created_at, LLMCallRow.latency_s)
            .where(LLMCallRow.task_id.in_(ids)))).all()
    answers: dict[str, list[datetime]] = {}
    for task_id, at, _ in rows:
        answers.setdefault(str(task_id), []).append(at)
    inside = [float(r[2]) for r in rows if after <= r[1] <= until]
    latency = statistics.fmean(inside) if inside else float("nan")
    return call_rate(answers, after, until), latency


async def _first_answers(
    sessions: async_sessionmaker[AsyncSession], ids: list[str]
) -> dict[str, datetime]:
    """When each task's first LLM call was answered (recorded)."""
    async with sessions() as session:
        rows = (await session.execute(
            select(LLMCallRow.task_id, func.min(LLMCallRow.created_at))
            .where(LLMCallRow.task_id.in_(ids)).group_by(LLMCallRow.task_id))).all()
    return {str(r[0]): r[1] for r in rows}


#: what :class:`Meters` calls the database's committed transactions
COMMITS = "pg_commits"


class Meters:
    """CPU seconds so far of each party of a run: the worker process (``pid``; None: this
    process, the embedded runner), the child processes it has reaped (MCP servers, checks),
    the database backends serving it and the driver's, and the driver process (NaN when it
    is the worker too)."""

    def __init__(self, pid: int | None, backends: BackendCPU | None) -> None:
        self.pid, self.backends = pid, backends

    def read(self) -> dict[str, float]:
        nan = float("nan")
        pg = self.backends.read() if self.backends is not None else {}
        return {"worker": process_cpu(self.pid), "children": children_cpu(self.pid),
                "pg_workers": pg.get("workers", nan), "pg_driver": pg.get("driver", nan),
                "driver": process_cpu(None) if self.pid is not None else nan,
                COMMITS: float(self.backends.commits()) if self.backends is not None else nan}


def cpu_per_call(before: dict[str, float], after: dict[str, float],
                 calls: float) -> dict[str, float]:
    """Milliseconds per LLM call of each party between two :meth:`Meters.read`."""
    nan = float("nan")
    out = {f"cpu_ms_per_call_{k}" if k != "worker" else "cpu_ms_per_call":
           1000 * (after[k] - before[k]) / calls if calls else nan
           for k in after if k != COMMITS}
    if COMMITS in after:  # not CPU: how many transactions, per call
        out["pg_commits_per_call"] = (after[COMMITS] - before[COMMITS]) / calls if calls else nan
    return out


async def measure(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], dispatch: Any,
    *, latency: float, concurrency: int, timeout: float, pid: int | None = None,
    backends: BackendCPU | None = None,
) -> dict[str, Any]:
    """Dispatch every task, wait for all, compute the numbers. ``pid``: the worker process
    whose CPU time is measured (None: this process, the embedded runner's); ``backends``:
    the database's backends (None: not measured)."""
    meters = Meters(pid, backends)
    start_wall, t0, cpu0 = utcnow(), time.monotonic(), meters.read()
    for task_id in ids:
        await dispatch(task_id)
    rows = await wait_all(sessions, ids, timeout)
    if not any(r.llm_calls for r in rows):
        errors = {r.error for r in rows}
        raise RuntimeError(f"no task made an LLM call: {sorted(map(str, errors))[:3]}")
    wall = time.monotonic() - t0
    cpu1 = meters.read()
    cpu = cpu1["worker"] - cpu0["worker"]
    calls = sum(r.llm_calls for r in rows)
    finished = [r.finished_at for r in rows if r.finished_at is not None]
    first_done = min(finished)
    # "all running": from the moment every task had its first answer (all of them are in
    # their call loop) until the first one finished. Starting the window at the dispatch
    # instead counted the start-up of every task (dispatch, claim, loading, the first call)
    # as time without calls, which understated the rate most where tasks are short or few;
    # the start-up is reported on its own (``startup_s``).
    firsts = await _first_answers(sessions, ids)
    last_first = max(firsts.values())
    window = (first_done - last_first).total_seconds()
    if window <= 0:  # a task finished before the last one's first answer: no such window
        window_start = start_wall
        window = (first_done - start_wall).total_seconds()
    else:
        window_start = last_first
    startup = [(firsts[r.id] - r.started_at).total_seconds() - latency for r in rows
               if r.id in firsts and r.started_at is not None]
    rate, steady_latency = await _calls_between(sessions, ids, window_start, first_done)
    ideal = min(len(ids), concurrency) / latency
    runs = [(r.finished_at - r.started_at).total_seconds() for r in rows
            if r.finished_at is not None and r.started_at is not None]
    stretch = [(r.finished_at - r.started_at).total_seconds() / (r.llm_calls * latency)
               for r in rows if r.finished_at and r.started_at and r.llm_calls]
    return {
        "tasks": len(ids),
        "succeeded": sum(r.status == "succeeded" for r in rows),
        "wall_s": wall,
        "tasks_per_s": len(ids) / wall,
        "llm_calls": calls,
        "llm_calls_per_s": calls / wall,
        "window_s": window,
        "window_from_last_start": window_start is not start_wall,
        "startup_s": statistics.median(startup),
        "steady_llm_calls_per_s": rate,
        "ideal_llm_calls_per_s": ideal,
        "efficiency": rate / ideal,
        "overall_efficiency": (calls / wall) / ideal,
        "mean_task_latency_s": statistics.fmean(
            (f - start_wall).total_seconds() for f in finished),
        "mean_task_run_s": statistics.fmean(runs),
        "mean_call_stretch": statistics.fmean(stretch),
        "call_latency_stretch": steady_latency / latency,
        "cpu_s": cpu,
        **cpu_per_call(cpu0, cpu1, calls),
    }


async def _replace_finished(sessions: async_sessionmaker[AsyncSession], running: set[str],
                            every: list[str], dispatch: Any, model: str,
                            workload: Workload = TEXTCRAFT) -> int:
    """Queue and dispatch a new task for each of ``running`` that finished; how many."""
    async with sessions() as session:
        done = list((await session.execute(
            select(Task.id).where(Task.id.in_(running), Task.status.in_(FINAL_STATUSES))
        )).scalars())
    if not done:
        return 0
    running.difference_update(done)
    fresh = await insert_tasks(sessions, len(done), model, first_seed=len(every),
                               workload=workload)
    for task_id in fresh:
        await dispatch(task_id)
    running.update(fresh)
    every.extend(fresh)
    return len(done)


async def _answered(sessions: async_sessionmaker[AsyncSession], ids: list[str]) -> int:
    async with sessions() as session:
        return int((await session.execute(
            select(func.count(func.distinct(LLMCallRow.task_id)))
            .where(LLMCallRow.task_id.in_(ids)))).scalar_one())


async def measure_steady(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], dispatch: Any, model: str,
    *, latency: float, concurrency: int, duration: float, timeout: float,
    pid: int | None = None, backends: BackendCPU | None = None, poll: float = 0.2,
    workload: Workload = TEXTCRAFT,
) -> dict[str, Any]:
    """Keep ``len(ids)`` tasks running for ``duration`` seconds: dispatch ``ids``, and
    whenever one finishes queue and dispatch a new one (checked every ``poll`` seconds).
    The window opens once every first task has answered (or one has finished); its call
    rate counts every task at its pace (:func:`call_rate`), so the time a replacement
    spends before its first answer counts as lost. The CPU of each party is read at the
    window's edges. Afterwards nothing is replaced and the last tasks finish."""
    meters = Meters(pid, backends)
    every, running = list(ids), set(ids)
    t0 = time.monotonic()
    for task_id in ids:
        await dispatch(task_id)
    replaced = 0
    while await _answered(sessions, ids) < len(ids):
        replaced += await _replace_finished(sessions, running, every, dispatch, model,
                                              workload)
        if replaced or time.monotonic() - t0 > timeout:
            break
        await asyncio.sleep(poll)
    settle = time.monotonic() - t0
    after, cpu0, start = utcnow(), meters.read(), time.monotonic()
    replaced = 0
    while time.monotonic() - start < duration:
        await asyncio.sleep(poll)
        replaced += await _replace_finished(sessions, running, every, dispatch, model,
                                              workload)
    until, cpu1 = utcnow(), meters.read()
    rows = await wait_all(sessions, every, timeout)
    answers: dict[str, list[datetime]] = {}
    async with sessions() as session:
        for task_id, at in (await session.execute(
                select(LLMCallRow.task_id, LLMCallRow.created_at)
                .where(LLMCallRow.task_id.in_(every)))).all():
            answers.setdefault(str(task_id), []).append(at)
    window = (until - after).total_seconds()
    rate = call_rate(answers, after, until)
    ideal = min(len(ids), concurrency) / latency
    calls = rate * window
    return {
        "steady": True,
        "tasks": len(ids),
        "tasks_run": len(every),
        "succeeded": sum(r.status == "succeeded" for r in rows),
        "settle_s": settle,
        "window_s": window,
        "replaced": replaced,
        "llm_calls": calls,
        "steady_llm_calls_per_s": rate,
        "ideal_llm_calls_per_s": ideal,
        "efficiency": rate / ideal,
        "cpu_s": cpu1["worker"] - cpu0["worker"],
        **cpu_per_call(cpu0, cpu1, calls),
    }


def _cpu_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The CPU per LLM call of each party, and their sum (where each is known)."""
    parts = [("worker process", "cpu_ms_per_call"),
             *([("the worker's child processes (MCP servers, checks; those exited)",
                 "cpu_ms_per_call_children")] if result.get("workload") == "mcp" else []),
             ("PostgreSQL backends serving the worker(s)", "cpu_ms_per_call_pg_workers"),
             ("the bench driver's process (dispatch, polling)", "cpu_ms_per_call_driver"),
             ("PostgreSQL backends serving the driver", "cpu_ms_per_call_pg_driver")]
    rows = []
    total = 0.0
    for label, key in parts:
        value = float(result.get(key, float("nan")))
        rows.append((f"CPU per LLM call: {label}", "not measured" if value != value
                     else f"{value:.2f} ms"))
        if value == value:
            total += value
    served = [float(result.get(k, float("nan"))) for k in ("cpu_ms_per_call",
                                                            "cpu_ms_per_call_pg_workers")]
    if all(v == v for v in served):
        rows.append(("CPU per LLM call: worker + its PostgreSQL backends",
                     f"{sum(served):.2f} ms"))
    rows.append(("CPU per LLM call: every party above", f"{total:.2f} ms"))
    commits = float(result.get("pg_commits_per_call", float("nan")))
    if commits == commits:
        rows.append(("PostgreSQL transactions per LLM call (every connection; "
                     "pg_stat_database)", f"{commits:.2f}"))
    return rows


def format_table(result: dict[str, Any]) -> str:
    workload = str(result.get("workload", TEXTCRAFT.name))
    head = [
        ("workload", workload),
        ("tasks answered by", str(result.get("answered_by", TEXTCRAFT.answered_by))),
        ("mode", result["mode"] + (f" ({result['processes']} process(es))"
                                    if result["processes"] else "")),
        ("LLM latency", f"{result['latency_s']:.3g} s"),
    ]
    if result.get("steady"):
        rows = [
            *head,
            ("tasks kept running (run in all, succeeded)",
             f"{result['tasks']} ({result['tasks_run']}, {result['succeeded']})"),
            ("until every first task answered", f"{result['settle_s']:.1f} s"),
            ("steady window", f"{result['window_s']:.1f} s ({result['replaced']} tasks "
             "finished and were replaced in it)"),
            ("LLM calls in the window", f"{result['llm_calls']:.0f}"),
            ("LLM calls/s (steady)", f"{result['steady_llm_calls_per_s']:.1f}"),
            ("ideal LLM calls/s", f"{result['ideal_llm_calls_per_s']:.1f}"),
            ("efficiency (steady)", f"{100 * result['efficiency']:.0f}%"),
        ]
    else:
        rows = [
            *head,
            ("tasks (succeeded)", f"{result['tasks']} ({result['succeeded']})"),
            ("wall time", f"{result['wall_s']:.2f} s"),
            ("tasks/s", f"{result['tasks_per_s']:.2f}"),
            ("LLM calls", f"{result['llm_calls']}"),
            ("LLM calls/s (overall)", f"{result['llm_calls_per_s']:.1f}"),
            ("task start-up (claim to first call sent), median", f"{result['startup_s']:.2f} s"),
            ("all running (every task answered once .. first finish)",
             f"{result['window_s']:.1f} s" + ("" if result["window_from_last_start"]
                                              else " (from the dispatch: no such window)")),
            ("LLM calls/s (all running)", f"{result['steady_llm_calls_per_s']:.1f}"),
            ("ideal LLM calls/s", f"{result['ideal_llm_calls_per_s']:.1f}"),
            ("efficiency (all running)", f"{100 * result['efficiency']:.0f}%"),
            ("per-call stretch (call latency / model latency)",
             f"{result['call_latency_stretch']:.2f}"),
            ("mean task latency", f"{result['mean_task_latency_s']:.2f} s"),
            ("mean run time / (calls x latency)", f"{result['mean_call_stretch']:.2f}"),
        ]
    rows += [*_cpu_rows(result), ("load (1 min)", f"{load_avg():.2f}")]
    which = "steady" if result.get("steady") else "while all run"
    # the figures name a workload other than the default, so that a line read alone says it
    of = "" if workload == TEXTCRAFT.name else f" ({workload} workload)"
    figures = [Figure(f"LLM calls/s {which} / ideal{of}", 100 * result["efficiency"], 90.0,
                      "%", higher=True)]
    if result["cpu_ms_per_call"] == result["cpu_ms_per_call"]:  # not NaN
        figures.append(Figure(f"worker CPU per LLM call{of}", result["cpu_ms_per_call"], 1.5,
                              "ms"))
    pg = float(result.get("cpu_ms_per_call_pg_workers", float("nan")))
    if pg == pg:
        figures.append(Figure(f"PostgreSQL CPU per LLM call{of}", pg, 1.0, "ms"))
    return "\n".join([table(rows), *(f.line() for f in figures)])
