"""How many processes one sandboxed command may have at once: a ``pids`` cgroup per command.

``RLIMIT_NPROC`` cannot do it: the kernel never enforces it for the host's root user, whom the
sandbox's root is (a user namespace mapping it elsewhere would hide the file system's owners).
So each command gets its own cgroup of the ``pids`` controller with ``pids.max``; everything
the command starts is in it, and a fork past the limit fails (``Resource temporarily
unavailable``) instead of filling the host's process table. Found where the host offers it:

- cgroup v1: the ``pids`` hierarchy (``/sys/fs/cgroup/pids``);
- cgroup v2: a ``cgroup2`` mount whose root lists ``pids`` in ``cgroup.subtree_control``.

The commands' cgroups live under ``adapt-bash/`` there and are removed after each command.
Without a writable ``pids`` controller (a container without its cgroups mounted writable) the
limit is not enforced; this is logged once, and the time limit still ends a fork bomb.
(Memory is limited per process with ``RLIMIT_AS``, in the launcher: ``sandbox.py``.)
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import time
import uuid
from pathlib import Path

logger = logging.getLogger(__name__)

#: folder of the commands' cgroups under the controller's root
GROUP = "adapt-bash"
_MOUNTS = Path("/proc/self/mounts")


def _candidates() -> list[Path]:
    """Roots of a ``pids`` controller: v1 ``pids`` hierarchies, then cgroup2 mounts."""
    v1: list[Path] = []
    v2: list[Path] = []
    try:
        lines = _MOUNTS.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split()
        if len(parts) < 4:
            continue
        where, kind, options = Path(parts[1]), parts[2], parts[3].split(",")
        if kind == "cgroup" and "pids" in options:
            v1.append(where)
        elif kind == "cgroup2":
            v2.append(where)
    return v1 + v2


def _usable(root: Path) -> Path | None:
    """``root/adapt-bash`` when commands' cgroups with ``pids.max`` can be made there."""
    v2 = (root / "cgroup.subtree_control").is_file()
    try:
        if v2 and "pids" not in (root / "cgroup.subtree_control").read_text().split():
            return None
        base = root / GROUP
        base.mkdir(exist_ok=True)
        if v2 and "pids" not in (base / "cgroup.subtree_control").read_text().split():
            (base / "cgroup.subtree_control").write_text("+pids")
        probe = base / f"probe-{uuid.uuid4().hex[:8]}"
        probe.mkdir()
        try:
            ok = (probe / "pids.max").is_file()
        finally:
            probe.rmdir()
        return base if ok else None
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def pids_base() -> Path | None:
    """Where the commands' ``pids`` cgroups are made, or ``None`` (logged once)."""
    for root in _candidates():
        base = _usable(root)
        if base is not None:
            return base
    logger.warning("intercode_bash: no writable pids cgroup controller (cgroup v1 pids or v2 "
                   "with pids enabled): the per-command process limit is not enforced, only "
                   "the time limit ends a fork bomb")
    return None


class CommandGroup:
    """One command's cgroup: made with ``pids.max``, joined by the launcher, removed after."""

    def __init__(self, base: Path, max_processes: int) -> None:
        self.path = base / uuid.uuid4().hex
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(int(max_processes)))

    @property
    def procs(self) -> Path:
        """Writing a process id here moves that process (and its future children) in."""
        return self.path / "cgroup.procs"

    def current(self) -> int:
        """How many processes are in the cgroup now."""
        try:
            return int((self.path / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    def remove(self, wait: float = 3.0) -> None:
        """Kill what is left in the cgroup (the sandbox is over) and remove it."""
        deadline = time.monotonic() + wait
        while True:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")  # v2, kernel 5.14+
            try:
                pids = [int(p) for p in self.procs.read_text().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    logger.warning("intercode_bash: could not remove the cgroup %s", self.path)
                    return
                time.sleep(0.02)


def command_group(max_processes: int | None) -> CommandGroup | None:
    """A fresh cgroup limiting a command to ``max_processes`` processes (``None``: no limit
    asked, or the host offers no ``pids`` controller)."""
    if not max_processes:
        return None
    base = pids_base()
    if base is None:
        return None
    try:
        return CommandGroup(base, max_processes)
    except OSError as exc:
        logger.warning("intercode_bash: could not make a pids cgroup under %s: %s", base, exc)
        return None
