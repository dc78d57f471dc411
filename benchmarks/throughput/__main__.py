"""``python -m benchmarks.throughput``: the throughput benchmark's command. It starts and
drives the workers it measures; the measurement is :mod:`benchmarks.throughput.measure`.

    python -m benchmarks.throughput [--tasks 200] [--latency 1.0] [--mode worker|inprocess]
                                       [--database-url URL] [--broker-url URL] [--processes 1]
                                       [--steady SECONDS]

The simulated TextCraft model is served over HTTP by the simulator's server (in its own
process) with ``latency`` seconds per completion. ``worker`` mode runs one real Celery worker
process (threads pool, concurrency >= tasks) against PostgreSQL and Redis; ``inprocess`` runs
the embedded runner in this process on SQLite (no Redis). A few warm-up tasks run first and are
not counted.

Without ``--database-url`` a throw-away database is created (PostgreSQL: on
``ADAPT_BENCH_POSTGRES_URL``, default ``postgresql://postgres@127.0.0.1:5432/postgres``; SQLite:
a temporary file) and dropped afterwards.

Besides the worker's CPU, the PostgreSQL backends' CPU (read from ``/proc``: the server must
run on this host) and this driver's own are printed as separate lines. ``--steady SECONDS``:
instead of one burst of ``tasks`` tasks, keep ``tasks`` running (a new one queued as each
finishes) and measure a window of that length (``measure.measure_steady``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from adapt.logsetup import setup_logging
from adapt.settings import Settings
from adapt.store.db import create_engine, session_factory
from benchmarks.perfkit import scratch_database
from benchmarks.processes import bench_env, logged_process, sim_server
from benchmarks.throughput.cpu import DRIVER_APP, backend_cpu
from benchmarks.throughput.measure import (
    DEFAULT_BROKER,
    SIM_SPEC,
    format_table,
    insert_tasks,
    measure,
    measure_steady,
    warm_up,
)
from workers.celery_app import create_app
from workers.dispatchers import CeleryDispatcher
from workers.embedded import EmbeddedRunner
from workers.loop import new_event_loop

logger = logging.getLogger(__name__)

_WORKER_SCRIPT = """
import sys
from adapt.settings import Settings
from workers.celery_app import start_worker
sys.exit(start_worker(Settings(), concurrency=int(sys.argv[1]), loglevel="WARNING"))
"""


def _wait_worker_ready(broker_url: str, queue: str, pid: int, timeout: float = 60) -> None:
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


def _driver_engine(url: str) -> Any:
    """The driver's engine; on PostgreSQL its connections name themselves ``DRIVER_APP``, so
    that their backends' CPU is told from the workers'."""
    if url.startswith("postgresql"):
        return create_engine(url, connect_args={
            "server_settings": {"application_name": DRIVER_APP}})
    return create_engine(url)


async def _run_worker_mode(
    url: str, broker_url: str, spec: str, n: int, latency: float, log_dir: Path,
    processes: int = 1, steady: float = 0.0,
) -> dict[str, Any]:
    queue = f"adapt-bench-{uuid.uuid4().hex[:8]}"
    per_process = max(-(-n // processes), 1)
    base_url = spec.rsplit("@", 1)[1]  # the simulator's endpoint, which tasks may name
    env = bench_env(ADAPT_DATABASE_URL=url, ADAPT_BROKER_URL=broker_url, ADAPT_CELERY_QUEUE=queue,
               ADAPT_LLM_ENDPOINTS=json.dumps([base_url]))
    engine = _driver_engine(url)
    sessions = session_factory(engine)
    dispatcher = CeleryDispatcher(broker_url, queue=queue)
    args = [sys.executable, "-c", _WORKER_SCRIPT, str(per_process)]
    try:
        with contextlib.ExitStack() as stack:
            procs = [stack.enter_context(logged_process(args, env, log_dir / f"worker-{i}.log"))
                     for i in range(processes)]
            for proc in procs:
                await asyncio.to_thread(_wait_worker_ready, broker_url, queue, proc.pid)
            await warm_up(sessions, dispatcher.dispatch, spec, 60 + 50 * latency)
            ids = await insert_tasks(sessions, n, spec)
            with backend_cpu(url) as backends:
                if steady > 0:
                    result = await measure_steady(
                        sessions, ids, dispatcher.dispatch, spec, latency=latency,
                        concurrency=per_process * processes, duration=steady,
                        timeout=60 + 200 * latency, pid=procs[0].pid, backends=backends)
                else:
                    result = await measure(sessions, ids, dispatcher.dispatch, latency=latency,
                                           concurrency=per_process * processes,
                                           timeout=60 + 200 * latency, pid=procs[0].pid,
                                           backends=backends)
            if processes > 1:  # every worker's CPU, not the first's
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


async def _run_inprocess_mode(url: str, spec: str, n: int, latency: float,
                              steady: float = 0.0) -> dict[str, Any]:
    concurrency = max(n, 1)
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": url, "concurrency": concurrency,
                                        "llm_endpoints": [spec.rsplit("@", 1)[1]]})
    engine = create_engine(url)
    sessions = session_factory(engine)
    runner = EmbeddedRunner(settings)
    try:
        await warm_up(sessions, runner.dispatch, spec, 60 + 50 * latency)
        ids = await insert_tasks(sessions, n, spec)
        if steady > 0:
            return await measure_steady(sessions, ids, runner.dispatch, spec, latency=latency,
                                        concurrency=concurrency, duration=steady,
                                        timeout=60 + 200 * latency)
        return await measure(sessions, ids, runner.dispatch, latency=latency,
                             concurrency=concurrency, timeout=60 + 200 * latency)
    finally:
        await runner.aclose()
        await engine.dispose()


def run(
    tasks: int = 200, latency: float = 1.0, mode: str = "worker",
    database_url: str | None = None, broker_url: str = DEFAULT_BROKER, processes: int = 1,
    steady: float = 0.0,
) -> dict[str, Any]:
    """Run the benchmark; returns the numbers (see :func:`measure`) plus the mode.
    ``processes``: worker processes in ``worker`` mode (they share the tasks); ``steady``:
    seconds of steady state to measure instead of one burst (:func:`measure_steady`)."""
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
                                                      log_dir, processes, steady))
            else:
                # the event loop ``adapt serve`` runs on (uvicorn picks uvloop when installed)
                with asyncio.Runner(loop_factory=new_event_loop) as runner:
                    result = runner.run(_run_inprocess_mode(url, spec, tasks, latency, steady))
        except Exception:
            for log in sorted(log_dir.glob("*.log")):
                logger.error("%s:\n%s", log.name, log.read_text(errors="replace")[-4000:])
            raise
    return {"mode": mode, "processes": processes if mode == "worker" else 0,
            "latency_s": latency, **result}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--mode", choices=["worker", "inprocess"], default="worker")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes in worker mode (default 1)")
    parser.add_argument("--steady", type=float, default=0.0, metavar="SECONDS",
                        help="keep --tasks tasks running (a new one as each finishes) and "
                        "measure a window of SECONDS (default: one burst)")
    args = parser.parse_args(argv)
    setup_logging(False)
    result = run(args.tasks, args.latency, args.mode, args.database_url, args.broker_url,
                 args.processes, args.steady)
    print(format_table(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
