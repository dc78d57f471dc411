"""kill -9 of a worker in the middle of an MCP filesystem task (MCPMark's file_arrangement on
the npm filesystem server, behind a proxy that logs every call it forwards): another worker
resumes it by replay, and the task ends with the same workspace as an uninterrupted run, with
no call that is not idempotent executed twice against the final workspace."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig, run_task
from adapt.envs.mcp import MCPEnvironment, MCPSettings
from adapt.envs.mcp.grammar import action
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from tests.service.helpers import insert_task, task_row
from tests.support.httpreceiver import QuietHandler
from tests.support.mcp_servers import HERE, filesystem_spec, require_filesystem_server
from tests.support.mcpmark_service import runnable_tasks
from tests.support.mcpmark_solutions import replies
from tests.support.openai_http import chat_body
from tests.support.workers import BROKER_URL, Workers, wait_finished

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow

SHORT_LEASE = {"lease_seconds": 2, "heartbeat_seconds": 0.5, "sweep_seconds": 1}
TASK = "file_arrangement"


def halfway(steps: list[str], ws: str) -> list[str]:
    """The task's script with one idempotent write after 9 moves: the call the kill lands in."""
    at = 5 + 9
    note = action("write_file", {"path": f"{ws}/others/progress.txt", "content": "halfway\n"})
    return [*steps[:at], note, *steps[at:]]


def endpoint_for(reply: Callable[[ChatRequest], str]) -> type[QuietHandler]:
    class Endpoint(QuietHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            prompt = "\n".join(m["content"] for m in body.get("messages", []))
            text = reply(ChatRequest(prompt=prompt or body.get("prompt", "")))
            self.send_json(chat_body(text, usage=(1, 1), model="scripted"))

    return Endpoint


@pytest.fixture
def scripted(request: pytest.FixtureRequest) -> Iterator[str]:
    task = next(t for t in runnable_tasks() if t["task_id"] == TASK)
    template = HERE.parents[1].parent / "shared" / "data" / "mcpmark-filesystem"
    reply = replies(TASK, template / task["initial_state"], edit=halfway)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), endpoint_for(reply))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def registrations(tmp_path: Path, log: Path | None, snapshots: Path) -> dict[str, Any]:
    task = next(t for t in runnable_tasks() if t["task_id"] == TASK)
    data = HERE.parents[1].parent / "shared" / "data" / "mcpmark-filesystem"
    verify = data / task["path"] / "verify.py"
    return {
        "servers": {"filesystem": filesystem_spec(log=log, slow={"write_file": 8.0})
                    if log else filesystem_spec()},
        "workspaces": {"desktop_template": str(data / task["initial_state"])},
        "checks": {TASK: {"command": [sys.executable, str(HERE / "snapshot_check.py"),
                                      str(snapshots), str(verify)],
                          "env": {"FILESYSTEM_TEST_DIR": "{workspace}"}}},
        "work_dir": str(tmp_path / "episodes"),
    }


CONFIG = {"server": "filesystem", "workspace": "desktop_template", "check": TASK,
          "task": "Organize the files of the desktop into work/, life/, archives/, temp/ and "
                  "others/."}


async def uninterrupted(tmp_path: Path, snapshots: Path) -> dict[str, str]:
    task = next(t for t in runnable_tasks() if t["task_id"] == TASK)
    data = HERE.parents[1].parent / "shared" / "data" / "mcpmark-filesystem"
    model = FunctionModel(replies(TASK, data / task["initial_state"], edit=halfway))
    env = MCPEnvironment(settings=MCPSettings.model_validate(
        registrations(tmp_path / "alone", None, snapshots)))
    try:
        result = await run_task(env, CONFIG, RunConfig(strategy="react"), model)
    finally:
        env.close()
    assert result.status == "succeeded", result
    return dict(json.loads(snapshots.read_text().splitlines()[-1]))


async def test_kill_9_mid_mcp_task_resumes_with_the_same_workspace(
    tmp_path: Path, pg_sessions: async_sessionmaker[AsyncSession], workers: Workers,
    queue: str, scripted: str,
) -> None:
    require_filesystem_server()
    expected = await uninterrupted(tmp_path, tmp_path / "alone.jsonl")
    log, snapshots = tmp_path / "calls.jsonl", tmp_path / "final.jsonl"
    settings = {f"mcp_{k}": v for k, v in registrations(tmp_path, log, snapshots).items()}
    a = workers.start(concurrency=2, llm_endpoints=[scripted], **SHORT_LEASE, **settings)
    task_id = await insert_task(pg_sessions, environment="mcp", config=CONFIG,
                                model=f"openai:scripted@{scripted}",
                                run_config=RunConfig(strategy="react"))
    from workers.dispatchers import CeleryDispatcher

    dispatcher = CeleryDispatcher(BROKER_URL, queue=queue)
    await dispatcher.dispatch(task_id)
    await dispatcher.aclose()
    deadline = time.monotonic() + 90
    while not (log.exists() and '"pending": true' in log.read_text()):
        assert time.monotonic() < deadline, workers.logs()
        await asyncio.sleep(0.1)
    a.kill9()  # the write is held at the server: in flight
    assert (await task_row(pg_sessions, task_id)).status == "running"

    workers.start(concurrency=2, llm_endpoints=[scripted], **SHORT_LEASE, **settings)
    rows = await wait_finished(pg_sessions, [task_id], 120, workers.logs)
    assert rows[task_id].status == "succeeded", (rows[task_id].error, workers.logs())
    assert rows[task_id].attempt == 2

    final = dict(json.loads(snapshots.read_text().splitlines()[-1]))
    assert final == expected  # the same workspace as the uninterrupted run
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    servers = list(dict.fromkeys(c["proxy"] for c in calls))
    assert len(servers) == 2  # the killed attempt's server, and the resumed one's
    first = [c for c in calls if c["proxy"] == servers[0] and not c.get("pending")]
    last = [c for c in calls if c["proxy"] == servers[1] and not c.get("pending")]
    assert sum(c["tool"] == "move_file" for c in first) == 9
    moves = [json.dumps(c["arguments"], sort_keys=True) for c in last
             if c["tool"] == "move_file"]
    assert len(moves) == 18 and len(set(moves)) == 18  # each move once on the final workspace
    assert sum(c["tool"] == "write_file" for c in last) == 1  # the idempotent one, sent again
    assert not any(c["tool"].startswith(("list", "read")) for c in last[:14])  # not replayed
    deadline = time.monotonic() + 15  # the attempt closes its environment after the end
    while list((tmp_path / "episodes").iterdir()):
        assert time.monotonic() < deadline, "the episode folder was not removed"
        await asyncio.sleep(0.1)
