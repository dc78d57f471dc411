"""The plug-in guide's walkthrough, run as written (docs/writing-an-environment.md, section 8).

The files of the lamp plug-in are taken from the page's code blocks, installed with pip, and
checked with the conformance kit; the page's ``adapt run`` command and its ``curl`` request
(through a real ``adapt serve``, with the ``script:`` model) must end ``succeeded``; and a
server started before the install refuses the new environment until it is restarted, as the
page says.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapt.envs import registry
from adapt.envs.testing import CHECKS, check_environment
from tests.e2e.test_embedded_serve import Server, free_port, wait_for
from tests.support.pip_install import importable, pip_install

pytestmark = pytest.mark.slow

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "writing-an-environment.md"
SECTION = "## 8. From nothing to a succeeded task, offline"
PACKAGE = "adapt_env_lamp"


def section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    return text[start:text.index("\n## ", start + len(SECTION))]


def guide_files() -> dict[str, str]:
    """Each code block the section introduces with its file name: ``path`` -> text."""
    found = re.findall(r"^`(adapt-env-lamp/[^`]+)`:\n\n```[a-z]*\n(.*?)^```$", section(),
                       flags=re.MULTILINE | re.DOTALL)
    return dict(found)


def bash_lines() -> list[str]:
    blocks = re.findall(r"^```bash\n(.*?)^```$", section(), flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def curl_body() -> dict[str, Any]:
    """The request the section sends (its ``curl`` posts the file ``lamp-task.json``)."""
    (command,) = [x for x in bash_lines() if x.startswith("curl ")]
    assert "-X POST localhost:8000/tasks" in command and command.endswith("-d @lamp-task.json")
    (text,) = re.findall(r"`lamp-task.json`.*?```json\n(.*?)^```$", section(),
                         flags=re.MULTILINE | re.DOTALL)
    body: dict[str, Any] = json.loads(text)
    return body


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plug-in written from the guide and installed with pip into a folder of its own."""
    root = tmp_path_factory.mktemp("guide")
    files = guide_files()
    assert {Path(p).name for p in files} == {"pyproject.toml", "__init__.py", "executor.txt",
                                             "planner.txt"}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    assert "pip install -e ./adapt-env-lamp" in bash_lines()[0]
    target = tmp_path_factory.mktemp("site-packages")
    pip_install(root / "adapt-env-lamp", target)
    return target


@pytest.fixture
def on_path(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from importable(installed, PACKAGE, monkeypatch)


def _env(installed: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(installed), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def test_the_guides_plugin_passes_the_conformance_kit(on_path: Path) -> None:
    report = check_environment(registry.get("lamp"),
                               actions=["look", "take match", "light lamp"])
    assert report.passed == list(CHECKS)


def test_the_guides_adapt_run_command_succeeds(installed: Path, tmp_path: Path) -> None:
    (line,) = [x for x in bash_lines() if x.startswith(".venv/bin/adapt run ")]
    argv = [sys.executable, "-m", "adapt.cli", *shlex.split(line)[1:]]
    env = {**_env(installed), "ADAPT_DATA_DIR": str(tmp_path)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "succeeded" in done.stdout


def _post(server: Server, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/tasks", json=body, timeout=10)


def test_the_guides_request_succeeds_once_the_server_is_restarted(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A server that read its environments before the install refuses 'lamp'; restarted, it
    runs the guide's request to ``succeeded``."""
    site = tmp_path_factory.mktemp("later-site-packages")
    server = Server(tmp_path, free_port())
    try:
        server.start(PYTHONPATH=_env(site)["PYTHONPATH"])
        body = curl_body()
        listed = httpx.get(f"{server.url}/environments", timeout=10).json()
        assert "lamp" not in {e["name"] for e in listed["items"]}  # the server read its list
        # installed while the server runs: still unknown to it
        for entry in installed_copy(tmp_path_factory, site):
            assert entry.exists()
        refused = _post(server, body)
        assert refused.status_code == 422, refused.text
        assert "unknown environment 'lamp'" in refused.text
        server.stop()
        server.start(PYTHONPATH=_env(site)["PYTHONPATH"])
        accepted = _post(server, body)
        assert accepted.status_code == 202, accepted.text
        task_id = accepted.json()["id"]

        def finished() -> dict[str, Any] | None:
            task: dict[str, Any] = httpx.get(f"{server.url}/tasks/{task_id}", timeout=10).json()
            return task if task["status"] not in ("queued", "running") else None

        task = wait_for(finished, 60, "the guide's task to finish")
        assert task["status"] == "succeeded", task
        assert task["result"]["reward"] == 1.0
        assert task["models"]["executor"]["simulated"] is True
        assert task["worker"] and task["worker"] in server.log.read_text()  # the runner's id
        tree = httpx.get(f"{server.url}/tasks/{task_id}/tree", timeout=10).json()["tree"]
        assert tree["logic"] == "and"  # the root, decomposed into two sub-tasks
        assert [c["goal"] for c in tree["children"]] == ["take a match", "light the lamp"]
        assert all(c["status"] == "succeeded" for c in tree["children"])
    finally:
        server.stop()


def installed_copy(tmp_path_factory: pytest.TempPathFactory, site: Path) -> list[Path]:
    """Install the guide's plug-in into ``site`` (a folder already on a server's path)."""
    root = tmp_path_factory.mktemp("guide-again")
    for path, text in guide_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    pip_install(root / "adapt-env-lamp", site)
    return [site / PACKAGE / "__init__.py"]
