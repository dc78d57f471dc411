"""Issue 14, smaller defects of the CLI found by hand: `adapt serve --port <busy>` fails before
announcing anything; `adapt run "goal"` works; the run header ends its line before an error;
`adapt llm serve --help` shows the install command whole."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def adapt(*args: str, tmp: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADAPT_DATA_DIR": str(tmp), "COLUMNS": "200"}
    env.pop("ADAPT_DATABASE_URL", None)
    env.pop("ADAPT_BROKER_URL", None)
    return subprocess.run([sys.executable, "-m", "adapt.cli", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=tmp)


def test_serve_on_a_busy_port_fails_before_saying_ready(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = adapt("serve", "--port", str(port), tmp=tmp_path)
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "API ready" not in done.stderr + done.stdout


def test_run_takes_the_goal_from_its_usage_line(tmp_path: Path) -> None:
    done = adapt("run", "craft beehive", "--strategy", "react", tmp=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "error" not in done.stderr.lower()
    assert "craft beehive" in done.stdout


def test_the_run_header_ends_its_line_before_an_error(tmp_path: Path) -> None:
    done = adapt("run", "--config", '{"seed": 3, "goal": "craft beehive"}', tmp=tmp_path)
    assert done.returncode != 0 and "error" in done.stderr
    assert "profile default" in done.stdout and done.stdout.endswith("\n")


def test_llm_serve_help_shows_the_extra(tmp_path: Path) -> None:
    done = adapt("llm", "serve", "--help", tmp=tmp_path)
    assert done.returncode == 0
    assert '".[local]"' in done.stdout.replace("\n", " ")
