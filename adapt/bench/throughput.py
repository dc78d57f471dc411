"""Throughput benchmark: many concurrent TextCraft tasks against a slow (simulated) LLM.

    python -m adapt.bench.throughput [--tasks 200] [--latency 1.0] [--mode worker|inprocess]
                                     [--database-url URL] [--broker-url URL] [--processes 1]

The simulated TextCraft model is served over HTTP by the simulator's server (in its own
process) with ``latency`` seconds per completion. ``worker`` mode runs one real Celery worker
process (threads pool, concurrency >= tasks) against PostgreSQL and Redis; ``inprocess`` runs
the embedded runner in this process on SQLite (no Redis). Each task makes its LLM calls one
after another, so with every task running at once the ideal LLM-call throughput is
``concurrency / latency``; the table reports how close the run came, over the window in which
every task is in its call loop (from the moment each has had its first answer until the first
one finishes), with the per-call stretch (the call latency the worker saw / the model's) and
the worker process's CPU time per LLM call. A few warm-up tasks run first and are not counted.

Without ``--database-url`` a throw-away database is created (PostgreSQL: on
``ADAPT_BENCH_POSTGRES_URL``, default ``postgresql://postgres@127.0.0.1:5432/postgres``; SQLite:
a temporary file) and dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.bench.perfkit import Figure, load_avg, scratch_database, table
from adapt.engine import RunConfig
from adapt.settings import Settings
from adapt.store.db import create_engine, session_factory
from adapt.store.models import FINAL_STATUSES, LLMCallRow, Task, utcnow

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
SIM_SPEC = "sim:textcraft?capability=1"

_SIM_SCRIPT = """
import sys, uvicorn
from adapt.sim.server import create_app
uvicorn.run(create_app(latency=float(sys.argv[2])), host="127.0.0.1", port=int(sys.argv[1]),
            log_level="warning", access_log=False)
"""
_WORKER_SCRIPT = """
import sys
from adapt.settings import Settings
from workers.celery_app import start_worker
sys.exit(start_worker(Settings(), concurrency=int(sys.argv[1]), loglevel="WARNING"))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


@contextlib.contextmanager
def _process(
    args: list[str], env: dict[str, str], log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


@contextlib.contextmanager
def sim_server(latency: float, log_dir: Path) -> Iterator[str]:
    """The simulator's OpenAI-compatible server in a subprocess; yields its base URL."""
    port = _free_port()
    args = [sys.executable, "-c", _SIM_SCRIPT, str(port), str(latency)]
    with _process(args, _env(), log_dir / "sim.log") as proc:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{base}/v1/models", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the simulator server did not start") from None
                time.sleep(0.1)
        yield f"{base}/v1"


async def insert_tasks(
    sessions: async_sessionmaker[AsyncSession], n: int, model: str, first_seed: int = 0
) -> list[str]:
    """``n`` queued TextCraft tasks (seeds ``first_seed``..) for ``model``."""
    rc = RunConfig(d_max=4)
    ids = [uuid.uuid4().hex for _ in range(n)]
    async with sessions.begin() as session:
        session.add_all(Task(
            id=task_id, tenant="bench", status="queued", environment="textcraft",
            environment_config={"seed": seed}, strategy=rc.strategy, d_max=rc.d_max,
            run_config=rc.model_dump(mode="json"), executor_model=model, planner_model=model,
            executor_simulated=True, planner_simulated=True,
        ) for seed, task_id in enumerate(ids, first_seed))
    return ids


#: tasks run before the measured ones, so that the process's one-time start-up work (imports,
#: the first connections, the recipe book) is not counted per call
WARMUP_TASKS = 4


async def warm_up(sessions: async_sessionmaker[AsyncSession], dispatch: Any, model: str,
                  timeout: float) -> None:
    ids = await insert_tasks(sessions, WARMUP_TASKS, model, first_seed=10_000)
    for task_id in ids:
        await dispatch(task_id)
    await wait_all(sessions, ids, timeout)


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


async def _calls_between(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], after: datetime,
    until: datetime,
) -> tuple[float, float]:
    """The call rate in [after, until] (calls per second, summed over the tasks) and the calls'
    mean latency as the client saw it. Each task's rate is its answers' pace inside the
    window: (answers - 1) / (last answer - first answer). Counting the answers that fall in a
    window of a few call latencies instead is off by up to one call per task at each edge
    (more than 100 % of the ideal, or less, by chance)."""
    async with sessions() as session:
        rows = (await session.execute(
            select(LLMCallRow.task_id, LLMCallRow.created_at, LLMCallRow.latency_s)
            .where(LLMCallRow.task_id.in_(ids), LLMCallRow.created_at >= after,
                   LLMCallRow.created_at <= until))).all()
    answers: dict[str, list[datetime]] = {}
    for task_id, at, _ in rows:
        answers.setdefault(str(task_id), []).append(at)
    rate = 0.0
    for times in answers.values():
        span = (max(times) - min(times)).total_seconds()
        if len(times) > 1 and span > 0:
            rate += (len(times) - 1) / span
    latency = statistics.fmean(float(r[2]) for r in rows) if rows else float("nan")
    return rate, latency


async def _first_answers(
    sessions: async_sessionmaker[AsyncSession], ids: list[str]
) -> dict[str, datetime]:
    """When each task's first LLM call was answered (recorded)."""
    async with sessions() as session:
        rows = (await session.execute(
            select(LLMCallRow.task_id, func.min(LLMCallRow.created_at))
            .where(LLMCallRow.task_id.in_(ids)).group_by(LLMCallRow.task_id))).all()
    return {str(r[0]): r[1] for r in rows}


def _cpu_seconds(pid: int | None) -> float:
    """CPU seconds (user + system) of process ``pid`` (None: this process) so far."""
    if pid is None:
        return time.process_time()
    # Linux: utime and stime, in clock ticks, are fields 14 and 15 of /proc/PID/stat (the
    # command name, field 2, may hold spaces: split after its closing parenthesis)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], dispatch: Any,
    *, latency: float, concurrency: int, timeout: float, pid: int | None = None,
) -> dict[str, Any]:
    """Dispatch every task, wait for all, compute the numbers. ``pid``: the worker process
    whose CPU time is measured (None: this process, the embedded runner's)."""
    start_wall, t0, cpu0 = utcnow(), time.monotonic(), _cpu_seconds(pid)
    for task_id in ids:
        await dispatch(task_id)
    rows = await wait_all(sessions, ids, timeout)
    if not any(r.llm_calls for r in rows):
        errors = {r.error for r in rows}
        raise RuntimeError(f"no task made an LLM call: {sorted(map(str, errors))[:3]}")
    wall = time.monotonic() - t0
    cpu = _cpu_seconds(pid) - cpu0
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
        "cpu_ms_per_call": 1000 * cpu / calls if calls else float("nan"),
    }


def _wait_worker_ready(broker_url: str, queue: str, pid: int, timeout: float = 60) -> None:
    from workers.celery_app import create_app

    probe = create_app(broker_url, queue=queue, name="adapt-bench-probe")
    name = f"adapt-{pid}@{socket.gethostname()}"
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if probe.control.ping(destination=[name], timeout=0.5):
                return
        raise TimeoutError(f"worker {name} did not answer a ping in {timeout:.0f}s")
    finally:
        probe.close()


async def _run_worker_mode(
    url: str, broker_url: str, spec: str, n: int, latency: float, log_dir: Path,
    processes: int = 1,
) -> dict[str, Any]:
    from workers.dispatchers import CeleryDispatcher

    queue = f"adapt-bench-{uuid.uuid4().hex[:8]}"
    per_process = max(-(-n // processes), 1)
    base_url = spec.rsplit("@", 1)[1]  # the simulator's endpoint, which tasks may name
    env = _env(ADAPT_DATABASE_URL=url, ADAPT_BROKER_URL=broker_url, ADAPT_CELERY_QUEUE=queue,
               ADAPT_LLM_ENDPOINTS=json.dumps([base_url]))
    engine = create_engine(url)
    sessions = session_factory(engine)
    dispatcher = CeleryDispatcher(broker_url, queue=queue)
    args = [sys.executable, "-c", _WORKER_SCRIPT, str(per_process)]
    try:
        with contextlib.ExitStack() as stack:
            procs = [stack.enter_context(_process(args, env, log_dir / f"worker-{i}.log"))
                     for i in range(processes)]
            for proc in procs:
                await asyncio.to_thread(_wait_worker_ready, broker_url, queue, proc.pid)
            await warm_up(sessions, dispatcher.dispatch, spec, 60 + 50 * latency)
            ids = await insert_tasks(sessions, n, spec)
            result = await measure(sessions, ids, dispatcher.dispatch, latency=latency,
                                   concurrency=per_process * processes,
                                   timeout=60 + 200 * latency,
                                   pid=procs[0].pid if processes == 1 else None)
            if processes > 1:  # every worker's CPU, not this process's
                result["cpu_ms_per_call"] = float("nan")
            return result
    finally:
        await dispatcher.aclose()
        await engine.dispose()
        with contextlib.suppress(Exception):
            import redis

            client = redis.Redis.from_url(broker_url)
            keys = list(client.scan_iter(match=f"*{queue}*"))  # the queue, kombu's bindings
            if keys:
                client.delete(*keys)
            client.close()


async def _run_inprocess_mode(url: str, spec: str, n: int, latency: float) -> dict[str, Any]:
    from workers.embedded import EmbeddedRunner

    concurrency = max(n, 1)
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": url, "concurrency": concurrency,
                                        "llm_endpoints": [spec.rsplit("@", 1)[1]]})
    engine = create_engine(url)
    sessions = session_factory(engine)
    runner = EmbeddedRunner(settings)
    try:
        await warm_up(sessions, runner.dispatch, spec, 60 + 50 * latency)
        ids = await insert_tasks(sessions, n, spec)
        return await measure(sessions, ids, runner.dispatch, latency=latency,
                             concurrency=concurrency, timeout=60 + 200 * latency)
    finally:
        await runner.aclose()
        await engine.dispose()


def run(
    tasks: int = 200, latency: float = 1.0, mode: str = "worker",
    database_url: str | None = None, broker_url: str = DEFAULT_BROKER, processes: int = 1,
) -> dict[str, Any]:
    """Run the benchmark; returns the numbers (see :func:`measure`) plus the mode.
    ``processes``: worker processes in ``worker`` mode (they share the tasks)."""
    if mode not in ("worker", "inprocess"):
        raise ValueError(f"mode must be 'worker' or 'inprocess', not {mode!r}")
    with contextlib.ExitStack() as stack:
        log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="adapt-bench-")))
        url = database_url or stack.enter_context(
            scratch_database("postgres" if mode == "worker" else "sqlite"))
        base_url = stack.enter_context(sim_server(latency, log_dir))
        spec = f"openai:{SIM_SPEC}@{base_url}"
        try:
            if mode == "worker":
                result = asyncio.run(_run_worker_mode(url, broker_url, spec, tasks, latency,
                                                      log_dir, processes))
            else:
                # the event loop ``adapt serve`` runs on (uvicorn picks uvloop when installed)
                from workers.loop import new_event_loop

                with asyncio.Runner(loop_factory=new_event_loop) as runner:
                    result = runner.run(_run_inprocess_mode(url, spec, tasks, latency))
        except Exception:
            for log in sorted(log_dir.glob("*.log")):
                logger.error("%s:\n%s", log.name, log.read_text(errors="replace")[-4000:])
            raise
    return {"mode": mode, "processes": processes if mode == "worker" else 0,
            "latency_s": latency, **result}


def format_table(result: dict[str, Any]) -> str:
    rows = [
        ("mode", result["mode"] + (f" ({result['processes']} process(es))"
                                    if result["processes"] else "")),
        ("tasks (succeeded)", f"{result['tasks']} ({result['succeeded']})"),
        ("LLM latency", f"{result['latency_s']:.3g} s"),
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
        ("worker CPU per LLM call", f"{result['cpu_ms_per_call']:.2f} ms"),
        ("load (1 min)", f"{load_avg():.2f}"),
    ]
    figures = [Figure("LLM calls/s while all run / ideal", 100 * result["efficiency"], 90.0,
                      "%", higher=True)]
    if result["cpu_ms_per_call"] == result["cpu_ms_per_call"]:  # not NaN
        figures.append(Figure("worker CPU per LLM call", result["cpu_ms_per_call"], 2.0, "ms"))
    return "\n".join([table(rows), *(f.line() for f in figures)])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--mode", choices=["worker", "inprocess"], default="worker")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes in worker mode (default 1)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    result = run(args.tasks, args.latency, args.mode, args.database_url, args.broker_url,
                 args.processes)
    print(format_table(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
