"""Episode folders: each episode of the mcp environment gets a folder of its own, holding the
server's working folder (``home/``) and, when the task names a workspace template, a fresh
copy of it (``workspace/``). The folder is removed when the episode ends (after scoring).

A folder is named by the episode's key when it has one (the task's id, so that a resumed
attempt rebuilds its workspace at the same path the recorded calls name) and randomly
otherwise. A key's leftover folder (from a worker that died) is replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from adapt.envs.processes import minimal_environment
from adapt.errors import UserError

log = logging.getLogger(__name__)

_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def default_work_dir() -> Path:
    return Path(tempfile.gettempdir()) / "adapt-mcp"


@dataclass(frozen=True)
class Episode:
    """One episode's folder."""

    root: Path
    #: the workspace copy (None: the task names no workspace template)
    workspace: Path | None

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def new_episode(work_dir: Path, template: Path | None, key: str | None = None) -> Episode:
    """A fresh episode folder under ``work_dir`` with a copy of ``template`` (if given)."""
    if template is not None and work_dir.resolve().is_relative_to(template.resolve()):
        raise UserError(f"mcp: the episode folders ({work_dir}) are inside the workspace "
                        f"template {template}: set ADAPT_MCP_WORK_DIR elsewhere")
    name = key if key is not None and _KEY.match(key) else uuid.uuid4().hex
    root = work_dir / name
    if root.exists():  # a dead attempt's leftover: the episode starts from the template again
        log.info("mcp: replacing the leftover episode folder %s", root)
        stop_leftovers(root)
        shutil.rmtree(root)
    root.mkdir(parents=True, mode=0o700)
    workspace = None
    if template is not None:
        workspace = root / "workspace"
        shutil.copytree(template, workspace, symlinks=True)
    return Episode(root, workspace)


def stop_leftovers(root: Path) -> list[int]:
    """Kill the processes still working in ``root`` (a dead worker's server, whose working
    folder it was), so none of them writes into the workspace made again at the same path;
    returns their ids. Linux: read from ``/proc/PID/cwd``."""
    killed: list[int] = []
    base = root.resolve()
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == base or cwd.is_relative_to(base):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    if killed:
        log.warning("mcp: killed %d leftover process(es) working in %s: %s", len(killed), root,
                    killed)
    return killed


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    passed: bool
    output: str


def run_check(command: list[str], env: dict[str, str], *, cwd: Path, timeout: float,
              limit: int) -> CheckOutcome:
    """Run a check (its ``{workspace}`` already expanded) with the minimal environment; exit
    status 0 passes. Its output (standard output and error) is kept up to ``limit``
    characters, the end first (where a verdict is printed)."""
    home = cwd / "check-home"
    home.mkdir(exist_ok=True)
    try:
        done = subprocess.run(command, cwd=cwd, env=minimal_environment(home=str(home), extra=env),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        text = (exc.stdout or b"").decode("utf-8", "replace")
        return CheckOutcome(False, shorten(f"{text}\n[the check timed out after {timeout:g} s]",
                                           limit))
    except OSError as exc:
        return CheckOutcome(False, f"the check could not be run: {exc}")
    text = done.stdout.decode("utf-8", "replace").strip()
    status = f"[exit status {done.returncode}]"
    return CheckOutcome(done.returncode == 0, shorten(f"{text}\n{status}".strip(), limit))


def shorten(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its start and its end, with a note between."""
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit} characters left out ...]\n"
    keep = max(0, limit - len(note))
    head = keep // 3
    return text[:head] + note + text[len(text) - (keep - head):]
