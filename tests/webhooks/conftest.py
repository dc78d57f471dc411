"""A real receiver process on loopback for the webhook tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.webhook_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def start(*args: str) -> Receiver:
        log = tmp_path / f"received-{len(started)}.jsonl"
        proc = subprocess.Popen([sys.executable, "-m", "tests.webhooks.receiver", str(log),
                                 *args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        host = args[args.index("--host") + 1] if "--host" in args else "127.0.0.1"
        r = Receiver(f"http://{host}:{port}/hooks", log, proc)
        started.append(r)
        return r

    yield start
    for r in started:
        r.proc.terminate()
        r.proc.wait(10)
