"""Helpers for worker tests: real Celery worker subprocesses, polling, the sim server's log."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.tree import FINAL_STATUSES
from adapt.store.models import LLMCallRow, Task
from adapt.store.prompts import call_prompts

BROKER_URL = os.environ.get("ADAPT_TEST_BROKER_URL", "redis://127.0.0.1:6379/0")
SIM = "sim:textcraft?capability=1"
ROOT = Path(__file__).resolve().parents[2]

_WORKER = (
    "import sys; from adapt.settings import Settings; "
    "from workers.celery_app import start_worker; "
    "sys.exit(start_worker(Settings(), loglevel='INFO'))"
)


def http_spec(base_url: str) -> str:
    return f"openai:{SIM}@{base_url}"


@dataclass
class WorkerProcess:
    """A real `adapt worker` process (Celery, threads pool) with its own log file."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    _log: Any = field(repr=False)
    broker_url: str = BROKER_URL

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self, lines: int = 60) -> str:
        text = self.log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the worker answers a ping (it consumes from then on)."""
        from workers.celery_app import create_app

        probe = create_app(self.broker_url, name="adapt-test-probe")
        name = f"adapt-{self.pid}@{socket.gethostname()}"
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    if probe.control.ping(destination=[name], timeout=0.5):
                        break
                except Exception:  # the broker restarted (a stale pooled connection): again
                    time.sleep(0.2)
                assert self.proc.poll() is None, self.tail()
                assert time.monotonic() < deadline, self.tail()
        finally:
            probe.close()

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return int(self.proc.returncode)


class Workers:
    """Starts worker processes against one database and queue; stops them all at teardown."""

    def __init__(self, database_url: str, queue: str, log_dir: Path,
                 broker_url: str = BROKER_URL) -> None:
        self.database_url, self.queue, self.log_dir = database_url, queue, log_dir
        self.broker_url = broker_url
        self.started: list[WorkerProcess] = []

    def start(self, *, root: Path = ROOT, **settings: object) -> WorkerProcess:
        """A worker of the code in ``root`` (another checkout: an older release's worker,
        with this environment's dependencies)."""
        env = {
            **os.environ,
            "ADAPT_DATABASE_URL": self.database_url,
            "ADAPT_BROKER_URL": self.broker_url,
            "ADAPT_CELERY_QUEUE": self.queue,
            "ADAPT_ALLOW_REMOTE_LLM": "0",
            "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
            **{f"ADAPT_{k.upper()}": json.dumps(v) if isinstance(v, list | dict) else str(v)
               for k, v in settings.items()},
        }
        log_path = self.log_dir / f"worker-{len(self.started)}.log"
        log = log_path.open("wb")
        proc = subprocess.Popen([sys.executable, "-c", _WORKER], env=env, stdout=log,
                                stderr=subprocess.STDOUT, cwd=root)
        worker = WorkerProcess(proc, log_path, log, self.broker_url)
        self.started.append(worker)
        return worker

    def logs(self) -> str:
        return "\n".join(f"--- worker {i} (pid {w.pid})\n{w.tail()}"
                         for i, w in enumerate(self.started))

    def full_logs(self) -> str:
        return "\n".join(w.log_path.read_text(errors="replace") for w in self.started)

    def stop_all(self) -> None:
        for w in self.started:
            w.stop()


async def wait_finished(
    sessions: async_sessionmaker[AsyncSession], ids: list[str], timeout: float,
    diagnostics: Any = None,
) -> dict[str, Task]:
    """Poll until every task is in a final status; returns the rows."""
    deadline = time.monotonic() + timeout
    while True:
        async with sessions() as s:
            rows = (await s.execute(select(Task).where(Task.id.in_(ids)))).scalars().all()
        if len(rows) == len(ids) and all(r.status in FINAL_STATUSES for r in rows):
            return {r.id: r for r in rows}
        if time.monotonic() > deadline:
            states = Counter(r.status for r in rows)
            extra = diagnostics() if callable(diagnostics) else ""
            raise AssertionError(f"tasks not finished after {timeout}s: {dict(states)}\n{extra}")
        await asyncio.sleep(0.1)


async def llm_call_count(sessions: async_sessionmaker[AsyncSession], task_id: str) -> int:
    async with sessions() as s:
        return int((await s.execute(select(func.count()).select_from(LLMCallRow)
                                    .where(LLMCallRow.task_id == task_id))).scalar_one())


async def persisted_prompt_hashes(
    sessions: async_sessionmaker[AsyncSession], task_id: str
) -> Counter[str]:
    """sha256 of each persisted call's prompt, as the sim server hashes it."""
    async with sessions() as s:
        prompts = await call_prompts(s, task_id)
    out: Counter[str] = Counter()
    for _, stored in sorted(prompts.items()):
        if stored.prompt is not None:
            text = stored.prompt
        else:
            assert stored.messages is not None
            text = "\n\n".join(m["content"] for m in stored.messages)
        out[hashlib.sha256(text.encode()).hexdigest()] += 1
    return out


def sim_prompt_hashes(log: dict[str, Any]) -> Counter[str]:
    assert log["size"] < log["capacity"], "the sim log overflowed"
    return Counter(e["prompt_sha256"] for e in log["entries"] if e["status"] == 200)
