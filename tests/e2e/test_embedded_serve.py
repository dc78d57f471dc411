"""`adapt serve` as users run it: a subprocess, SQLite, no Redis, real HTTP. The server is
killed mid-task and restarted; the task resumes, finishes with the complete tree, and finished
LLM calls are not sent again."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.sim import from_spec
from tests.support.simserver import SimServer, start_sim_server, stop_sim_server

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir, self.port = data_dir, port
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[str] | None = None
        self.log = data_dir / "serve.log"

    def start(self, **env: str) -> None:
        full = {**os.environ, "ADAPT_DATA_DIR": str(self.data_dir), "ADAPT_LEASE_SECONDS": "2",
                "ADAPT_HEARTBEAT_SECONDS": "0.5", "ADAPT_SWEEP_SECONDS": "0.5", **env}
        full.pop("ADAPT_DATABASE_URL", None)
        full.pop("ADAPT_BROKER_URL", None)
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "adapt.cli", "serve", "--port", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT, text=True, env=full,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.1)
        raise AssertionError("adapt serve did not become ready:\n" + self.log.read_text())

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def sim() -> Iterator[SimServer]:
    server = start_sim_server(latency=0.15)
    yield server
    stop_sim_server(server)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path, free_port())
    yield s
    s.stop()


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_embedded_server_restart_mid_task(server: Server, sim: SimServer) -> None:
    server.start(ADAPT_LLM_ENDPOINTS=json.dumps([sim.base_url]))
    model = f"openai:sim:textcraft?capability=1@{sim.base_url}"
    body = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4,
            "executor": {"model": model}}
    created = httpx.post(f"{server.url}/tasks", json=body, timeout=10)
    assert created.status_code == 202, created.text
    task_id = created.json()["id"]
    assert created.headers["location"] == f"/tasks/{task_id}"

    def calls() -> int:
        return int(httpx.get(f"{server.url}/tasks/{task_id}", timeout=5).json()["usage"]
                   ["llm_calls"])

    wait_for(lambda: calls() >= 6, 60, "some LLM calls")
    server.kill9()
    server.start(ADAPT_LLM_ENDPOINTS=json.dumps([sim.base_url]))
    final = wait_for(
        lambda: (t := httpx.get(f"{server.url}/tasks/{task_id}", timeout=5).json())["finished"]
        and t, 90, "the resumed task to finish")
    assert final["status"] == "succeeded" and final["attempt"] == 2, final
    assert final["usage"]["llm_calls"] == 15

    # the complete tree, equal to what the engine produces for the same game
    sink = MemorySink()
    asyncio_run(run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4),
                         from_spec("sim:textcraft?capability=1"), sink=sink))
    tree = httpx.get(f"{server.url}/tasks/{task_id}/tree", timeout=5).json()["tree"]
    assert summarize(tree) == summarize(sink.tree(with_steps=False)["tree"])

    # the event log: gap-free and resumable at any point, also after the task finished
    events = httpx.get(f"{server.url}/tasks/{task_id}/events", params={"since": 0, "limit": 1000},
                       timeout=5).json()["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    with httpx.stream("GET", f"{server.url}/tasks/{task_id}/events",
                      headers={"Last-Event-ID": str(len(events) - 3)}, timeout=10) as resp:
        ids = [int(line[4:]) for line in resp.iter_lines() if line.startswith("id: ")]
    assert ids == [len(events) - 2, len(events) - 1, len(events)]

    # no finished LLM call was sent to the model again (at most the one in flight at the kill)
    log = sim.log()
    sent = Counter(e["prompt_sha256"] for e in log["entries"] if e["status"] == 200)
    assert sum(sent.values()) <= 15 + 1
    prompts = [c["prompt"] for n in walk(tree) for c in node_calls(server, task_id, n["id"])]
    assert len(prompts) == 15
    repeated = [h for h in (hashlib.sha256(p.encode()).hexdigest() for p in prompts)
                if sent[h] > 1]
    assert len(repeated) <= 1, "finished LLM calls were sent again after the restart"


def asyncio_run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for c in node["children"] for n in walk(c))]


def node_calls(server: Server, task_id: str, node_id: int) -> list[dict[str, Any]]:
    detail = httpx.get(f"{server.url}/tasks/{task_id}/nodes/{node_id}", timeout=5).json()
    return list(detail["llm_calls"])


def summarize(node: dict[str, Any]) -> Any:
    keys = ("id", "kind", "goal", "depth", "logic", "status", "executor_success", "success",
            "reward", "steps_count")
    return json.dumps([{k: n[k] for k in keys} for n in walk(node)], sort_keys=True)
