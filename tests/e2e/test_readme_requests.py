"""The README's five requests, run as written (bash + curl) against `adapt serve` started the
way a new user starts it (embedded: SQLite, no broker, no OpenAI key), and the replies are
what the README says they are."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_embedded_serve import Server, free_port
from tests.test_readme import five_requests

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("curl") is None, reason="the README's requests use curl"),
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path, free_port())
    s.start(OPENAI_API_KEY="", ADAPT_OPENAI_API_KEY="")
    yield s
    s.stop()


def sh(command: str, port: int, task_id: str = "") -> str:
    command = command.replace("localhost:8000", f"127.0.0.1:{port}")
    env = {**os.environ, "ID": task_id}
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, f"{command}\n{out.stderr}"
    return out.stdout


def test_the_five_requests_work_as_the_readme_says(server: Server) -> None:
    submit, poll, tree, events, cancel = five_requests()
    assert submit.startswith("ID=$(")

    task_id = sh(submit + '; echo "$ID"', server.port).strip()
    assert len(task_id) == 22 and int(task_id, 16) >= 0, task_id

    # the SSE stream runs until the task finished, and ends with task.finished
    stream = sh(events, server.port, task_id)
    frames = [f for f in stream.split("\n\n") if f.strip() and not f.startswith("retry")]
    assert frames[0].startswith("id: 1\nevent: node.created")
    assert "event: task.finished" in frames[-1]
    seqs = [int(f.split("\n")[0].removeprefix("id: ")) for f in frames]
    assert seqs == list(range(1, len(seqs) + 1)), "gap-free sequence numbers"

    task = json.loads(sh(poll, server.port, task_id))
    assert task["id"] == task_id and task["status"] == "succeeded"
    assert task["simulated"] is True and task["d_max"] == 4
    assert task["environment_config"] == {"seed": 11}

    head, _, body = sh(tree, server.port, task_id).replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("HTTP/1.1 200") and "\netag: " in head.lower()
    etag = next(ln.split(":", 1)[1].strip() for ln in head.split("\n")
                if ln.lower().startswith("etag:"))
    assert json.loads(body)["tree"]["depth"] == 1
    again = sh(f"{tree} -H 'If-None-Match: {etag}'", server.port, task_id)
    assert again.startswith("HTTP/1.1 304")

    # cancel is idempotent: a finished task stays as it is
    for _ in range(2):
        cancelled = json.loads(sh(cancel, server.port, task_id))
        assert cancelled["id"] == task_id and cancelled["status"] == "succeeded"
