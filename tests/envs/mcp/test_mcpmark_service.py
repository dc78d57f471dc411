"""The 6 runnable MCPMark Filesystem tasks through the service (POST /tasks, the app with its
embedded worker, the real npm filesystem server on a fresh copy of each initial state, each
task's own verify.py as the registered check): a scripted model making a correct sequence of
calls (our fixture, tests/support/mcpmark_solutions.py) ends ``succeeded`` with the check's
``confirmed`` verdict; a wrong sequence ends ``failed`` with ``refuted``. Then one task on the
Python server (mcp-server-git)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from adapt.settings import Settings
from tests.support.mcp_servers import git_spec, require_filesystem_server, require_mcpmark
from tests.support.mcpmark_service import SCRIPTED, registrations, runnable_tasks, submission
from tests.support.mcpmark_solutions import SCRIPTS, by_task

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow


@asynccontextmanager
async def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str,
                  model: FunctionModel, extra: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    from adapt.service.model_factory import ModelFactory
    from api.main import create_app

    for name, value in extra.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ADAPT_MCP_WORK_DIR", str(tmp_path / "episodes"))
    monkeypatch.setattr(ModelFactory, "build", lambda self, spec, *a, **k: model)
    settings = Settings.model_validate({
        "ADAPT_DATABASE_URL": url,
        "path_roots": [str(require_mcpmark()), str(tmp_path)]})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client


async def finished(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    for _ in range(600):
        task = (await client.get(f"/tasks/{task_id}")).json()
        if task["status"] in ("succeeded", "failed", "error", "cancelled", "budget_exceeded"):
            return dict(task)
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} did not finish: {task}")


async def root(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    return dict((await client.get(f"/tasks/{task_id}/nodes/1")).json())


@pytest.mark.parametrize("wrong", [False, True], ids=["correct", "wrong"])
async def test_the_six_runnable_mcpmark_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              sqlite_url: str, wrong: bool) -> None:
    require_filesystem_server()
    tasks = runnable_tasks()
    assert sorted(t["task_id"] for t in tasks) == sorted(SCRIPTS)
    model = FunctionModel(by_task(wrong), name="scripted")
    async with service(tmp_path, monkeypatch, sqlite_url, model, registrations()) as client:
        ids = {}
        for task in tasks:
            created = await client.post("/tasks", json=submission(task))
            assert created.status_code == 202, created.text
            ids[task["task_id"]] = created.json()["id"]
        for name, task_id in ids.items():
            task = await finished(client, task_id)
            node = await root(client, task_id)
            if wrong:
                assert task["status"] == "failed", (name, task)
                assert node["verdict"] == "refuted" and "FAIL" in node["evidence"], name
            else:
                assert task["status"] == "succeeded", (name, task, node.get("evidence"))
                assert node["verdict"] == "confirmed" and "PASS" in (
                    node["evidence"].upper()), name
    assert list((tmp_path / "episodes").iterdir()) == []  # every copy removed after scoring


CHECK_COMMIT = """import os, subprocess, sys
log = subprocess.run(["git", "-C", os.environ["REPO"], "log", "--format=%s"],
                     capture_output=True, text=True).stdout
sys.exit(0 if "Add the release notes" in log.splitlines() else 1)
"""


def git_template(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["config", "user.name", "adapt"],
                 ["config", "user.email", "adapt@localhost"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "README.md"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "start"], cwd=repo, env=env, check=True)
    (repo / "NOTES.md").write_text("release notes\n")
    return repo


@pytest.mark.parametrize("wrong", [False, True], ids=["correct", "wrong"])
async def test_a_task_on_the_python_git_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               sqlite_url: str, wrong: bool) -> None:
    from adapt.envs.mcp.grammar import action

    repo = git_template(tmp_path)
    check = tmp_path / "check_commit.py"
    check.write_text(CHECK_COMMIT)
    message = "Add notes" if wrong else "Add the release notes"

    def reply(request: ChatRequest) -> str:
        run = request.as_prompt().rsplit("\nTask: ", 1)[-1]
        done = run.count("\n> ") - 1  # the actions taken so far
        script = [action("git_status", {"repo_path": "{repo}"}),
                  action("git_add", {"repo_path": "{repo}", "files": ["NOTES.md"]}),
                  action("git_commit", {"repo_path": "{repo}", "message": message}),
                  "think: The notes are committed. Task completed!"]
        copy = next((tmp_path / "episodes").iterdir()) / "workspace"  # the episode's copy
        return script[min(done, len(script) - 1)].replace("{repo}", str(copy))

    extra = {"ADAPT_MCP_SERVERS": json.dumps({"git": git_spec()}),
             "ADAPT_MCP_WORKSPACES": json.dumps({"notes-repo": str(repo)}),
             "ADAPT_MCP_CHECKS": json.dumps({"committed": {
                 "command": [sys.executable, str(check)], "env": {"REPO": "{workspace}"}}})}
    model = FunctionModel(reply, name="scripted")
    async with service(tmp_path, monkeypatch, sqlite_url, model, extra) as client:
        created = await client.post("/tasks", json={
            "environment": "mcp", "strategy": "react", "executor": {"model": SCRIPTED},
            "environment_config": {"server": "git", "workspace": "notes-repo",
                                   "check": "committed",
                                   "task": "Commit NOTES.md with the message 'Add the release "
                                           "notes'."}})
        assert created.status_code == 202, created.text
        task = await finished(client, created.json()["id"])
        node = await root(client, created.json()["id"])
        assert task["status"] == ("failed" if wrong else "succeeded"), (task, node)
        assert node["verdict"] == ("refuted" if wrong else "confirmed")
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True,
                         text=True).stdout
    assert log.split() == ["start"]  # the template itself is never touched
