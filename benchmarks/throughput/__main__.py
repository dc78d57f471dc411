"""``python -m benchmarks.throughput``: the throughput benchmark's command. It starts and
drives the workers it measures; the measurement is :mod:`benchmarks.throughput.measure`.

    python -m benchmarks.throughput [--tasks 200] [--latency 1.0] [--mode worker|inprocess]
                                       [--database-url URL] [--broker-url URL] [--processes 1]
                                       [--steady SECONDS] [--workload textcraft|tools|mcp]

The model is served over HTTP by the simulator's server (in its own process) with ``latency``
seconds per completion. ``worker`` mode runs one real Celery worker process (threads pool,
concurrency >= tasks) against PostgreSQL and Redis; ``inprocess`` runs the embedded runner in
this process on SQLite (no Redis). A few warm-up tasks run first and are not counted (the run
stops, naming their errors, if none of them succeeded).

``--workload`` (:mod:`benchmarks.throughput.workloads`) chooses the tasks; the output names it
and what answered the tasks:

- ``textcraft`` (default): TextCraft tasks under ADaPT with the text executor, answered by the
  simulated TextCraft model;
- ``tools``: the same tasks with the native tool-calling executor (``executor.kind: tools``),
  the simulated model answering each chat request with a tool call;
- ``mcp``: tasks in the mcp environment (tools executor), each with its own npm filesystem MCP
  server process on a copy of MCPMark's ``desktop_template``, scored by a registered check.
  No simulated model plays MCP: a *scripted stand-in* (a fixed plan of filesystem calls, not a
  model; :mod:`benchmarks.throughput.mcp_standin`) answers, served by the same server with the
  same latency. ``--tasks`` defaults to 20 here (a server process per task); the CPU of the
  worker's child processes (the servers, the checks) is printed on a line of its own. Without
  ``node``, the server (``$HOME/.cache/adapt-ci/node``, as ``.ci/run`` installs it), the
  ``mcp`` package or the MCPMark data, the bench stops at once saying what is missing.

Without ``--database-url`` a throw-away database is created (PostgreSQL: on
``ADAPT_BENCH_POSTGRES_URL``, default ``postgresql://postgres@127.0.0.1:5432/postgres``; SQLite:
a temporary file) and dropped afterwards; a database it names is migrated first (a new one gets
the schema) and kept, with the bench's tasks in it.

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
import os
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from adapt.logsetup import setup_logging
from adapt.settings import Settings
from adapt.store.db import create_engine, session_factory
from adapt.store.migrate import upgrade
from benchmarks.perfkit import scratch_database
from benchmarks.processes import bench_env, logged_process, sim_server
from benchmarks.throughput import mcp_standin
from benchmarks.throughput.cpu import DRIVER_APP, backend_cpu
from benchmarks.throughput.measure import (
    DEFAULT_BROKER,
    format_table,
    insert_tasks,
    measure,
    measure_steady,
    warm_up,
)
from benchmarks.throughput.workloads import TEXTCRAFT, WORKLOADS, Workload, find_workload
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
    processes: int = 1, steady: float = 0.0, work: Workload = TEXTCRAFT,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    queue = f"adapt-bench-{uuid.uuid4().hex[:8]}"
    per_process = max(-(-n // processes), 1)
    base_url = spec.rsplit("@", 1)[1]  # the simulator's endpoint, which tasks may name
    env = bench_env(ADAPT_DATABASE_URL=url, ADAPT_BROKER_URL=broker_url, ADAPT_CELERY_QUEUE=queue,
                    ADAPT_LLM_ENDPOINTS=json.dumps([base_url]), **(extra_env or {}))
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
            await warm_up(sessions, dispatcher.dispatch, spec, 60 + 50 * latency, work)
            ids = await insert_tasks(sessions, n, spec, workload=work)
            with backend_cpu(url) as backends:
                if steady > 0:
                    result = await measure_steady(
                        sessions, ids, dispatcher.dispatch, spec, latency=latency,
                        concurrency=per_process * processes, duration=steady,
                        timeout=60 + 200 * latency, pid=procs[0].pid, backends=backends,
                        workload=work)
                else:
                    result = await measure(sessions, ids, dispatcher.dispatch, latency=latency,
                                           concurrency=per_process * processes,
                                           timeout=60 + 200 * latency, pid=procs[0].pid,
                                           backends=backends)
            if processes > 1:  # every worker's CPU, not the first's
                result["cpu_ms_per_call"] = result["cpu_ms_per_call_children"] = float("nan")
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
                              steady: float = 0.0, work: Workload = TEXTCRAFT
                              ) -> dict[str, Any]:
    concurrency = max(n, 1)
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": url, "concurrency": concurrency,
                                        "llm_endpoints": [spec.rsplit("@", 1)[1]]})
    engine = create_engine(url)
    sessions = session_factory(engine)
    runner = EmbeddedRunner(settings)
    try:
        await warm_up(sessions, runner.dispatch, spec, 60 + 50 * latency, work)
        ids = await insert_tasks(sessions, n, spec, workload=work)
        if steady > 0:
            return await measure_steady(sessions, ids, runner.dispatch, spec, latency=latency,
                                        concurrency=concurrency, duration=steady,
                                        timeout=60 + 200 * latency, workload=work)
        return await measure(sessions, ids, runner.dispatch, latency=latency,
                             concurrency=concurrency, timeout=60 + 200 * latency)
    finally:
        await runner.aclose()
        await engine.dispose()


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in this process's environment inside the block (the embedded runner
    reads the mcp environment's registrations from it), restored after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run(
    tasks: int | None = None, latency: float = 1.0, mode: str = "worker",
    database_url: str | None = None, broker_url: str = DEFAULT_BROKER, processes: int = 1,
    steady: float = 0.0, workload: str = TEXTCRAFT.name,
) -> dict[str, Any]:
    """Run the benchmark; returns the numbers (see :func:`measure`) plus the mode and the
    workload. ``tasks``: None for the workload's default (200; mcp: 20); ``processes``: worker
    processes in ``worker`` mode (they share the tasks); ``steady``: seconds of steady state
    to measure instead of one burst (:func:`measure_steady`); ``workload``: textcraft,
    tools or mcp (:mod:`benchmarks.throughput.workloads`)."""
    if mode not in ("worker", "inprocess"):
        raise ValueError(f"mode must be 'worker' or 'inprocess', not {mode!r}")
    work = find_workload(workload)
    n = work.default_tasks if tasks is None else tasks
    with contextlib.ExitStack() as stack:
        log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="adapt-bench-")))
        # before anything starts: what the workload needs and is missing stops the run here
        extra_env = (mcp_standin.registrations(log_dir / "mcp-episodes")
                     if work.name == "mcp" else {})
        if database_url:  # a new database gets the schema; one up to date is left as it is
            upgrade(database_url)
        url = database_url or stack.enter_context(
            scratch_database("postgres" if mode == "worker" else "sqlite"))
        base_url = stack.enter_context(sim_server(latency, log_dir, setup=work.server_setup))
        spec = f"openai:{work.model}@{base_url}"
        try:
            if mode == "worker":
                result = asyncio.run(_run_worker_mode(url, broker_url, spec, n, latency,
                                                      log_dir, processes, steady, work,
                                                      extra_env))
            else:
                stack.enter_context(_environ(extra_env))
                # the event loop ``adapt serve`` runs on (uvicorn picks uvloop when installed)
                with asyncio.Runner(loop_factory=new_event_loop) as runner:
                    result = runner.run(_run_inprocess_mode(url, spec, n, latency, steady,
                                                            work))
        except Exception:
            for log in sorted(log_dir.glob("*.log")):
                logger.error("%s:\n%s", log.name, log.read_text(errors="replace")[-4000:])
            raise
    return {"mode": mode, "processes": processes if mode == "worker" else 0,
            "latency_s": latency, "workload": work.name, "answered_by": work.answered_by,
            **result}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=None,
                        help="concurrent tasks (default 200; 20 for --workload mcp)")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--mode", choices=["worker", "inprocess"], default="worker")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes in worker mode (default 1)")
    parser.add_argument("--steady", type=float, default=0.0, metavar="SECONDS",
                        help="keep --tasks tasks running (a new one as each finishes) and "
                        "measure a window of SECONDS (default: one burst)")
    parser.add_argument("--workload", choices=list(WORKLOADS), default=TEXTCRAFT.name,
                        help="textcraft (default): the text executor; tools: the same tasks "
                        "with the tool-calling executor; mcp: tasks on the npm filesystem MCP "
                        "server, answered by a scripted stand-in")
    args = parser.parse_args(argv)
    setup_logging(False)
    result = run(args.tasks, args.latency, args.mode, args.database_url, args.broker_url,
                 args.processes, args.steady, args.workload)
    print(format_table(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
