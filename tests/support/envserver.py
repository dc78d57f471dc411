"""Environment servers for tests: ``adapt env serve`` in a process of its own (which a test may
kill and start again on the same port), and any ASGI app in a thread of this process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from adapt.sim.server import serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
#: what the server logs for every change it applies (adapt.envserve.sessions)
APPLIED = re.compile(r"session (\w+): change (\d+) applied")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None,
                 log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log else ""
            raise RuntimeError(f"the server exited ({proc.returncode}): {tail}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer in {timeout} s")
        time.sleep(0.05)


class EnvServerProcess:
    """``adapt env serve NAME`` on a fixed loopback port; its log (stderr, INFO) appended to
    one file across restarts."""

    def __init__(self, name: str, log_path: Path, *, port: int | None = None,
                 settings: dict[str, str] | None = None) -> None:
        self.name = name
        self.port = port or free_port()
        self.log_path = log_path
        self.settings = settings or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        env = {**os.environ, **self.settings,
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "adapt.cli", "env", "serve", self.name,
                 "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=ROOT)
        self.starts += 1
        wait_healthy(self.url, timeout, self.proc, self.log_path)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)
        self.proc = None

    def restart(self, down_seconds: float = 1.0) -> None:
        self.kill()
        time.sleep(down_seconds)
        self.start()

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def applied(self) -> Counter[tuple[str, int]]:
        """How many times each (session, change number) was applied, over every start."""
        return Counter((m.group(1), int(m.group(2))) for m in APPLIED.finditer(self.log()))


@contextmanager
def env_server(name: str, log_path: Path, **options: Any) -> Iterator[EnvServerProcess]:
    server = EnvServerProcess(name, log_path, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """``app`` (ASGI, its lifespan run) on a free loopback port in a daemon thread; yields its
    URL."""
    with serve_in_thread(app, lifespan="on", name="the environment server") as url:
        yield url
