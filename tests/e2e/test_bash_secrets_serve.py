"""The sandbox finding as an attacker ran it: `adapt serve` with secrets in its environment, an
InterCode-Bash task whose model (a scripted endpoint on loopback) reads every environment in
the sandbox and whose gold does too; nothing the API answers holds a secret."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapt.envs.intercode_bash.layers import prepare
from tests.e2e.test_embedded_serve import Server, free_port, wait_for
from tests.support.bash_data import DATA, _skip_reason
from tests.support.httpreceiver import QuietHandler
from tests.support.openai_http import chat_body

pytestmark = pytest.mark.slow

SENTINEL = "sentinel-3b8e51a0"
READ_ALL = ("tr '\\0' '\\n' < /proc/1/environ; cat /proc/*/environ; env; "
            "cat /proc/$PPID/environ")
#: what the scripted model answers, call after call (then ``submit``)
REPLIES = [f"execute[{READ_ALL}]", "submit"]


class ScriptedEndpoint(QuietHandler):
    """An OpenAI-compatible chat endpoint answering ``REPLIES`` in turn."""

    calls = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with ScriptedEndpoint.lock:
            text = REPLIES[min(ScriptedEndpoint.calls, len(REPLIES) - 1)]
            ScriptedEndpoint.calls += 1
        self.send_json(chat_body(text, usage=(1, 1), model="scripted"))


@pytest.fixture
def endpoint() -> Iterator[str]:
    ScriptedEndpoint.calls = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedEndpoint)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for c in node["children"] for n in walk(c))]


def test_a_task_cannot_read_the_servers_secrets(tmp_path: Path, endpoint: str) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    cache = tmp_path / "bash-cache"
    prepare(DATA, cache, file_systems=[1])
    server = Server(tmp_path, free_port())
    try:
        server.start(
            ADAPT_BASH_CACHE_DIR=str(cache),
            ADAPT_LLM_ENDPOINTS=json.dumps([{"base_url": endpoint,
                                             "api_key": f"{SENTINEL}-key"}]),
            ADAPT_METRICS_TOKEN=f"{SENTINEL}-metrics",
            ADAPT_SQL_ADMIN_PASSWORD=f"{SENTINEL}-sql",
            AWS_SECRET_ACCESS_KEY=f"{SENTINEL}-aws",
        )
        body = {"environment": "intercode_bash", "strategy": "react",
                "environment_config": {"fs": 1, "question": "Show the environment.",
                                       "gold": READ_ALL},
                "executor": {"model": f"openai:scripted@{endpoint}", "max_steps": 3}}
        created = httpx.post(f"{server.url}/tasks", json=body, timeout=10)
        assert created.status_code == 202, created.text
        task_id = created.json()["id"]
        final = wait_for(
            lambda: (t := httpx.get(f"{server.url}/tasks/{task_id}", timeout=5).json())
            ["finished"] and t, 90, "the task to finish")
        tree = httpx.get(f"{server.url}/tasks/{task_id}/tree", timeout=5).json()["tree"]
        details = [httpx.get(f"{server.url}/tasks/{task_id}/nodes/{n['id']}", timeout=5).text
                   for n in walk(tree)]
    finally:
        server.stop()
    log = server.log.read_text()
    assert final["status"] in ("succeeded", "failed"), (final, log[-3000:])
    shown = "\n".join(details)
    assert "PATH=" in shown, shown[:3000]  # the model's command ran and its output is there
    assert SENTINEL not in shown
    assert SENTINEL not in json.dumps(final) and SENTINEL not in json.dumps(tree)
