"""What a user can name through the API for an MCP task: registered names only. No field
starts a process, names a path outside ``ADAPT_PATH_ROOTS`` or reaches an address the policy
refuses; each refusal is a 422 problem naming the field."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.main import create_app
from tests.support.api import FakeDispatcher, make_settings


@pytest.fixture
async def client(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                 ) -> AsyncIterator[httpx.AsyncClient]:
    inside, outside = tmp_path / "roots" / "ws", tmp_path / "elsewhere"
    inside.mkdir(parents=True)
    outside.mkdir()
    monkeypatch.setenv("ADAPT_MCP_SERVERS", json.dumps({
        "files": {"command": "mcp-server-filesystem", "args": ["{workspace}"]},
        "local-http": {"url": "http://127.0.0.1:9/mcp"},
        "metadata": {"url": "http://169.254.169.254/mcp"},
        "public": {"url": "https://mcp.example.com/mcp"}}))
    monkeypatch.setenv("ADAPT_MCP_WORKSPACES", json.dumps({"inside": str(inside),
                                                           "outside": str(outside)}))
    monkeypatch.setenv("ADAPT_MCP_CHECKS", json.dumps({"ok": {"command": ["true"]}}))
    app = create_app(make_settings(sqlite_url, path_roots=[str(tmp_path / "roots")]),
                     dispatcher=FakeDispatcher())
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        yield c


async def post(client: httpx.AsyncClient, config: dict[str, Any]) -> httpx.Response:
    # a script: model may play any environment (the simulator plays TextCraft only): the
    # environment_config decides
    return await client.post("/tasks", json={"environment": "mcp", "strategy": "react",
                                             "executor": {"model": 'script:["x"]'},
                                             "environment_config": config})


@pytest.mark.parametrize(("config", "says"), [
    ({"server": "sh", "task": "t"}, "not registered"),
    ({"server": "files", "task": "t", "workspace": "inside", "command": "sh -c id"},
     "Extra inputs are not permitted"),
    ({"server": "files", "task": "t", "workspace": "inside", "args": ["/"]}, "Extra inputs"),
    ({"server": "files", "task": "t", "workspace": "/etc"}, "pattern"),
    ({"server": "files", "task": "t", "workspace": "../roots"}, "pattern"),
    ({"server": "https://evil.example/mcp", "task": "t"}, "pattern"),
    ({"server": "files", "task": "t", "workspace": "inside", "check": "rm -rf /"}, "pattern"),
    ({"server": "files", "task": "t", "workspace": "inside", "check": "nope"}, "not registered"),
    ({"server": "files", "task": "t", "workspace": "inside", "url": "http://x"}, "Extra inputs"),
    ({"server": "files", "task": "t", "workspace": "outside"}, "ADAPT_PATH_ROOTS"),
    ({"server": "local-http", "task": "t"}, "ADAPT_MCP_ALLOWED_NETWORKS"),
    ({"server": "metadata", "task": "t"}, "link-local"),
])
async def test_user_fields_name_registered_things_only(client: httpx.AsyncClient,
                                                       config: dict[str, Any], says: str) -> None:
    answer = await post(client, config)
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["errors"][0]["field"].startswith("environment_config")
    assert says in answer.text


async def test_registered_names_are_accepted(client: httpx.AsyncClient) -> None:
    ok = await post(client, {"server": "files", "task": "t", "workspace": "inside",
                             "check": "ok"})
    assert ok.status_code == 202, ok.text
    assert ok.json()["environment_config"]["server"] == "files"
    public = await post(client, {"server": "public", "task": "t"})
    assert public.status_code == 202, public.text
