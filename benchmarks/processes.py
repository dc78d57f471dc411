"""The processes a performance benchmark starts (``python -m benchmarks.throughput``,
``python -m benchmarks.tree_read``, ``python -m benchmarks.overhead``): the simulator's HTTP
server, a worker, an instrumented API. Each runs with this checkout on its path and its output
in a log file, and is stopped when the benchmark leaves its block."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]

_SIM_SCRIPT = """
import importlib, sys, uvicorn
from adapt.sim.server import create_app
if len(sys.argv) > 3:  # a module whose register() adds a model to the simulator registry
    importlib.import_module(sys.argv[3]).register()
uvicorn.run(create_app(latency=float(sys.argv[2])), host="127.0.0.1", port=int(sys.argv[1]),
            log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_env(**extra: str) -> dict[str, str]:
    """This process's environment, this checkout first on ``PYTHONPATH``, plus ``extra``."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


@contextlib.contextmanager
def logged_process(
    args: list[str], env: dict[str, str], log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """``args`` in a subprocess writing to ``log_path``; terminated (then killed) on exit."""
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


def wait_http(proc: subprocess.Popen[bytes], url: str, what: str, timeout: float) -> None:
    """Poll ``url`` until it answers 2xx; ``RuntimeError`` if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start") from None
            time.sleep(0.1)


@contextlib.contextmanager
def sim_server(latency: float, log_dir: Path, setup: str | None = None) -> Iterator[str]:
    """The simulator's OpenAI-compatible server in a subprocess; yields its base URL.
    ``setup``: a module whose ``register()`` the server calls first (a model of a bench's
    own, e.g. :mod:`benchmarks.throughput.mcp_standin`)."""
    port = free_port()
    args = [sys.executable, "-c", _SIM_SCRIPT, str(port), str(latency), *([setup] if setup else [])]
    with logged_process(args, bench_env(), log_dir / "sim.log") as proc:
        base = f"http://127.0.0.1:{port}"
        wait_http(proc, f"{base}/v1/models", "the simulator server", 20)
        yield f"{base}/v1"
