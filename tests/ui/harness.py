"""What the browser tests drive: a real ``adapt serve`` process (embedded mode, SQLite in a temp
dir), a slow simulated model over HTTP so trees grow while the page watches, a TCP proxy that
can cut every open connection (a dropped event stream), the system Chromium through
Playwright, a 5,000-node task written straight through the store, and the tasks and plug-in
the tests submit and install."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from adapt.store.db import create_engine, session_factory
from adapt.store.models import NodeRow, Task, utcnow
from adapt.store.task_rows import append_event
from tests.e2e.test_embedded_serve import Server as ServeProcess
from tests.e2e.test_embedded_serve import free_port, wait_for

if TYPE_CHECKING:
    import pytest

    from tests.support.simserver import SimServer

__all__ = ["PLUGIN_EXECUTOR", "DropProxy", "Server", "chromium_path", "insert_big_task",
           "plugin_package", "slow_task", "start_server", "wait_for"]

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def chromium_path() -> str | None:
    found = os.environ.get("ADAPT_CHROMIUM") or next(
        (p for p in CHROMIUM_PATHS if Path(p).exists()), None)
    return found or shutil.which("chromium")


class Server(ServeProcess):
    """``adapt serve`` in a subprocess, as users run it (embedded: SQLite in ``data_dir``)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir, free_port())
        self.database_url = f"sqlite+aiosqlite:///{data_dir / 'adapt.db'}"

    def create_key(self, tenant: str = "ui") -> str:
        env = {**os.environ, "ADAPT_DATA_DIR": str(self.data_dir)}
        env.pop("ADAPT_DATABASE_URL", None)
        out = subprocess.run([sys.executable, "-m", "adapt.cli", "keys", "create", "--tenant",
                              tenant], capture_output=True, text=True, env=env, timeout=60,
                             check=True)
        return out.stdout.strip().splitlines()[-1]

    def submit(self, body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        response = httpx.post(f"{self.url}/tasks", json=body, headers=headers, timeout=10)
        assert response.status_code == 202, response.text
        data: dict[str, Any] = response.json()
        return data

    def get(self, path: str, key: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        response = httpx.get(f"{self.url}{path}", headers=headers, timeout=10)
        response.raise_for_status()
        return response.json()


class DropProxy:
    """A loopback TCP proxy in front of the server; ``drop()`` closes every open connection
    (both directions), as a flaky network or a restarted load balancer would."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        self.drops = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        with self.lock:
            sockets, self.open = self.open, []
            self.drops += 1
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.drop()


def big_tree_shape(size: int) -> list[dict[str, Any]]:
    """``size`` nodes shaped like an ADaPT tree: a task decomposes into an AND or OR group of
    three sub-tasks; a failed branch runs down the first sub-task of every AND group."""
    nodes: list[dict[str, Any]] = [dict(id=1, parent_id=None, position=0, depth=1, kind="task",
                                        logic=None, failing=True)]
    queue = [nodes[0]]
    while queue and len(nodes) < size:
        parent = queue.pop(0)
        group = dict(id=len(nodes) + 1, parent_id=parent["id"], position=0,
                     depth=parent["depth"] + 1, kind="group",
                     logic="or" if len(nodes) % 3 == 1 else "and", failing=parent["failing"])
        nodes.append(group)
        for position in range(3):
            if len(nodes) >= size:
                break
            child = dict(id=len(nodes) + 1, parent_id=group["id"], position=position,
                         depth=group["depth"], kind="task", logic=None,
                         failing=group["failing"] and (group["logic"] == "or" or position == 0))
            nodes.append(child)
            queue.append(child)
    return nodes


async def _insert_big_task(database_url: str, task_id: str, size: int, tenant: str) -> None:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine).begin() as session:
            now = utcnow()
            session.add(Task(
                id=task_id, tenant=tenant, status="failed", environment="textcraft",
                environment_config={"seed": 1}, goal=None, resolved_goal="craft a big tree",
                strategy="adapt", d_max=8, run_config={"strategy": "adapt", "d_max": 8},
                executor_model="sim:textcraft", planner_model="sim:textcraft",
                executor_simulated=True, planner_simulated=True, success=False, reward=0.0,
                llm_calls=size, prompt_tokens=100 * size, completion_tokens=10 * size,
                cost_usd=None, nodes_count=size, max_depth=0, created_at=now, started_at=now,
                finished_at=now, updated_at=now,
            ))
            await session.flush()
            shape = big_tree_shape(size)
            for n in shape:
                failed = n.pop("failing")
                row = dict(n, goal=f"sub-goal {n['id']}: craft item {n['id'] % 97}",
                           status="failed" if failed else "succeeded",
                           executor_success=None if n["kind"] == "group" else not failed,
                           success=not failed, reward=None, steps_count=0,
                           usage={"llm_calls": 1, "prompt_tokens": 100, "completion_tokens": 10,
                                  "cost_usd": None})
                session.add(NodeRow(task_id=task_id, **row))
                await append_event(session, task_id, "node.created", {"node": row},
                                   ordinal=n["id"])
            await append_event(session, task_id, "task.finished",
                               {"status": "failed", "result": None, "error": None})
    finally:
        await engine.dispose()


def insert_big_task(server: Server, task_id: str, size: int = 5000,
                    tenant: str = "default") -> None:
    # in a thread of its own: Playwright's sync API keeps an event loop on the test's thread
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _insert_big_task(server.database_url, task_id, size,
                                                  tenant)).result()


#: the executor kind a plug-in package adds (an entry point in ``adapt.executors``)
PLUGIN_EXECUTOR = "plugged"


def plugin_package(root: Path) -> Path:
    """An installed plug-in package, as pip leaves one: a ``.dist-info`` with an entry point
    that adds an executor kind (the ReAct executor under another name). Put ``root`` on the
    server's ``PYTHONPATH`` to install it there."""
    info = root / "adapt_ui_plugin-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adapt-ui-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[adapt.executors]\n{PLUGIN_EXECUTOR} = adapt.engine.executors.react:ReActExecutor\n")
    return root


def start_server(tmp_path_factory: pytest.TempPathFactory, sim: SimServer) -> Server:
    """``adapt serve`` that may call the simulated model's endpoint (the operator's list), with
    a plug-in executor installed."""
    s = Server(Path(tmp_path_factory.mktemp("serve")))
    plugins = plugin_package(Path(tmp_path_factory.mktemp("plugins")))
    path = os.pathsep.join(p for p in (str(plugins), os.environ.get("PYTHONPATH", "")) if p)
    s.start(ADAPT_LLM_ENDPOINTS=json.dumps([sim.base_url]), PYTHONPATH=path)
    return s


def slow_task(sim: SimServer, seed: int = 11, **extra: Any) -> dict[str, Any]:
    model = f"openai:sim:textcraft?capability=1@{sim.base_url}"
    return {"environment": "textcraft", "environment_config": {"seed": seed}, "d_max": 4,
            "executor": {"model": model}, **extra}
