"""Run bash commands in a throw-away copy-on-write view of a prepared root file system.

One :class:`Sandbox` is one episode. Its root is an overlay mount: the read-only layers prepared
by ``adapt data prepare-bash`` (the task set's file system over a small skeleton root) below a
per-episode upper directory that receives every write; ``/usr`` is a second overlay over the
prepared ``/usr`` layer (the tools of InterCode's image, see ``usr.py``; the host's ``/usr`` by
default), with its own upper directory. Discarding the episode directory
discards every change, so a reset is instant and a command can never write to the host or to
another episode.

Each command runs in fresh namespaces: ``unshare --mount`` mounts the two overlays in a private
mount namespace (they vanish with it), then bubblewrap enters the merged root with a new PID
namespace (the host's processes are invisible; everything dies with the command), a new network
namespace (only a loopback device, nothing listening), new IPC and UTS namespaces (hostname
``intercode``), ``no_new_privs`` and only the capabilities a container's root keeps for files
(no ``CAP_SYS_ADMIN``, no ``CAP_MKNOD``, no ``CAP_NET_*``). A wall-clock limit and an
output-size limit end a command by killing the sandbox; a per-file size limit bounds what one
write can store, a per-process memory limit (``RLIMIT_AS``) what one process can allocate, and a
``pids`` cgroup per command (``limits.py``, where the host offers one) how many processes it may
have at once (a fork bomb fails to fork). The working directory persists across commands like a
shell (``cd`` works): the shell reports it at exit on a pipe that only the parent reads, at most
``MAX_PWD_BYTES`` of it kept (the command can write nothing to the host through it); shell
variables do not persist (each command is a new ``bash``, as in InterCode).

Nothing of the worker's environment reaches the sandbox. Every process of the chain (the cgroup
helper, ``unshare``, ``sh``, ``prlimit``, bubblewrap) starts with
:func:`adapt.envs.processes.minimal_environment` (``PATH``, ``LANG``, ``HOME``), the command with
``SANDBOX_ENV``. The chain's matters: bubblewrap's own process stays PID 1 inside, and Linux
shows a process's initial environment in ``/proc/PID/environ`` (to the sandbox's root, for
PID 1); ``--clearenv`` cleans only the command's. What else was tried on the host, and why not:

- ``--as-pid-1`` (the command's shell as PID 1, no bubblewrap inside): the kernel ignores the
  signals PID 1 has no handler for, so ``kill $$`` in a command would do nothing, unlike in
  InterCode's container. With a clean environment, bubblewrap as PID 1 shows nothing secret.
- ``--unshare-user``: bubblewrap maps only the sandbox's root, to the host's root, so every
  other owner shows as ``nobody`` (``ls -l`` and ``chown`` tasks change), and the kernel's checks
  for uid 0 (such as those of ``/proc/sys``) pass as before: no gain for that cost.

``/proc`` is the sandbox's own (its PID namespace: only its processes are there), and the parts
of it that reach the host's kernel (``READ_ONLY_PROC``: ``/proc/sys`` and others) are bound
read-only over it from the launcher's ``/proc``. bubblewrap covers them itself only where
``access()`` calls them writable, which on gVisor (this project's hosts) it did not for
``/proc/sys``:
the sandbox's root could set kernel parameters for the whole host (``kernel.core_pattern``
names a program the kernel runs as root).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adapt.envs.intercode_bash.limits import command_group
from adapt.envs.processes import minimal_environment
from adapt.errors import UserError

#: seconds a command may run (InterCode's ``TIMEOUT_DURATION``)
DEFAULT_TIMEOUT = 10.0
#: bytes of output kept from one command; more ends the command
DEFAULT_MAX_OUTPUT = 1 << 20
#: bytes one file written inside the sandbox may reach (``RLIMIT_FSIZE``)
MAX_FILE_SIZE = 256 << 20
#: processes one command may have at once (its ``pids`` cgroup's ``pids.max``)
DEFAULT_MAX_PROCESSES = 128
#: bytes of address space one process inside the sandbox may map (``RLIMIT_AS``)
DEFAULT_MAX_MEMORY = 1 << 30
#: bytes kept of what the shell reports on its working-directory pipe (the last ones)
MAX_PWD_BYTES = 4096
#: the hostname inside the sandbox
HOSTNAME = "intercode"
#: environment of every command (what a Docker exec into InterCode's container sees)
SANDBOX_ENV: dict[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOSTNAME": HOSTNAME,
    "HOME": "/root",
    "TERM": "xterm",
}
#: capabilities the sandbox's root keeps (file ownership and permissions, signals inside)
KEPT_CAPABILITIES = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETUID",
    "CAP_SETGID",
)
#: parts of ``/proc`` that reach the host's kernel, mounted read-only over the sandbox's ``/proc``
#: (``sys``: kernel parameters such as ``kernel.core_pattern``; bubblewrap covers these itself
#: only when ``access()`` calls them writable, which it did not for ``/proc/sys`` on gVisor)
READ_ONLY_PROC = ("sys", "sysrq-trigger", "irq", "bus")
#: the system packages the sandbox needs on the host (Debian names)
SANDBOX_PACKAGES = ("bubblewrap", "util-linux")

# The script bash runs: enter the working directory, report the final one on a file descriptor
# (the episode's pwd file) when the shell exits (also after ``exit``), wait for background jobs
# (as a Docker exec does while they hold its output), then the command itself on its own line.
_PROLOGUE = (
    'cd -- "$ADAPT_WD" 2>/dev/null || cd /; unset ADAPT_WD; '
    "trap 'pwd >&{fd} 2>/dev/null; wait' EXIT\n"
)

#: the host programs the sandbox runs
TOOLS = ("bwrap", "unshare", "mount", "prlimit", "bash")

# The environment of every process of the chain (the cgroup helper, unshare, sh, prlimit,
# bubblewrap): built from nothing, never the worker's. bubblewrap stays PID 1 inside the sandbox,
# where any command can read its /proc/1/environ. The tools are found on the worker's PATH
# (where the operator installed them) and started by their full paths.
_LAUNCH_ENV = minimal_environment(home=SANDBOX_ENV["HOME"])

# Mount the overlays (paths relative to the episode directory, so that every episode's mount
# table reads the same), then hand over to bubblewrap (without the variables a shell exports on
# its own: PWD would show the episode's host path in bubblewrap's environment).
# Arguments: the mount program, the lower directories, then the command to hand over to.
_MOUNT = (
    "unset PWD OLDPWD SHLVL; "
    '"$1" -t overlay overlay -o lowerdir=$2,upperdir=root/up,workdir=root/work merged && '
    '"$1" -t overlay overlay -o lowerdir=u0,upperdir=usr/up,workdir=usr/work merged/usr && '
    'shift 2 && exec "$@"'
)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one command did."""

    #: standard output and standard error, interleaved as written (at most ``max_output`` bytes)
    output: bytes
    #: the exit status; ``None`` when the sandbox was killed (time or output limit)
    exit_code: int | None
    timed_out: bool = False
    #: the output limit was reached (the command was stopped there)
    truncated: bool = False
    #: the working directory after the command
    cwd: str = "/"
    #: wall-clock seconds
    seconds: float = 0.0

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")


def missing_tools() -> list[str]:
    """The host programs the sandbox needs but cannot find."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def require_tools() -> None:
    """Raise a :class:`UserError` naming the install command when a sandbox tool is missing."""
    missing = missing_tools()
    if missing:
        raise UserError(
            f"intercode_bash: the sandbox needs {', '.join(missing)}; install them with "
            f"`apt-get install -y {' '.join(SANDBOX_PACKAGES)}` (Debian/Ubuntu)"
        )
    if os.geteuid() != 0:
        raise UserError(
            "intercode_bash: the sandbox mounts overlay file systems in a private mount "
            "namespace, which needs root (run the worker as root, e.g. in its container)"
        )


def check_sandbox(layers: Sequence[Path], usr: Path) -> None:
    """Run ``true`` in a sandbox of ``layers``: raise a :class:`UserError` saying what the host
    (or container) must allow when namespaces or mounts are refused."""
    with Sandbox(layers, timeout=DEFAULT_TIMEOUT, usr=usr) as box:
        result = box.run("true", cwd="/")
    if result.exit_code != 0:
        said = " ".join(result.text.split())[:500] or "no output"
        raise UserError(
            f"intercode_bash: the sandbox cannot start here ({said}); it needs root and "
            "permission to create mount, PID and network namespaces and overlay mounts: in a "
            "container, CAP_SYS_ADMIN without seccomp and AppArmor confinement, or privileged "
            "(docs/deployment.md, InterCode-Bash workers)"
        )


class Sandbox:
    """One episode: a private, writable view of ``layers`` (topmost first)."""

    def __init__(
        self,
        layers: Sequence[Path],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
        work_dir: Path | None = None,
        usr: Path = Path("/usr"),
        max_processes: int | None = DEFAULT_MAX_PROCESSES,
        max_memory: int | None = DEFAULT_MAX_MEMORY,
    ) -> None:
        if not layers:
            raise ValueError("a sandbox needs at least one lower layer")
        self.timeout = float(timeout)
        self.max_output = int(max_output)
        #: processes at once per command (``None``: no limit)
        self.max_processes = max_processes
        #: bytes of address space per process (``None``: no limit)
        self.max_memory = max_memory
        self.layers = tuple(Path(p).resolve() for p in layers)
        self.dir = Path(tempfile.mkdtemp(prefix="adapt-bash-", dir=work_dir))
        for sub in ("root/up", "root/work", "usr/up", "usr/work", "merged"):
            (self.dir / sub).mkdir(parents=True)
        names = []
        for i, layer in enumerate(self.layers):
            name = f"l{i}"
            (self.dir / name).symlink_to(layer)
            names.append(name)
        self._lowerdir = ":".join(names)
        (self.dir / "u0").symlink_to(Path(usr).resolve())
        self.cwd = "/"
        self._closed = False

    @property
    def upper(self) -> Path:
        """The episode's writes to the root (overlayfs upper directory; ``/usr`` excluded)."""
        return self.dir / "root" / "up"

    def run(self, command: str, cwd: str | None = None) -> CommandResult:
        """Run ``command`` with ``bash``; the working directory starts at ``cwd`` (default: where
        the previous command left it) and is remembered for the next command."""
        if self._closed:
            raise UserError("intercode_bash: the sandbox was closed")
        start_dir = self.cwd if cwd is None else cwd
        limits = [f"--fsize={MAX_FILE_SIZE}", "--core=0"]
        if self.max_memory:
            limits.append(f"--as={int(self.max_memory)}")
        argv = [
            _where("unshare"), "--mount", "--propagation", "private", "--",
            "/bin/sh", "-c", _MOUNT, "adapt-sandbox", _where("mount"), self._lowerdir,
            _where("prlimit"), *limits, "--",
            _where("bwrap"), "--bind", "merged", "/", "--proc", "/proc",
            "--ro-bind", "/proc/sys", "/proc/sys",
            *(arg for name in READ_ONLY_PROC[1:]
              for arg in ("--ro-bind-try", f"/proc/{name}", f"/proc/{name}")),
            "--dev", "/dev",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", HOSTNAME, "--die-with-parent",
            "--new-session", "--cap-drop", "ALL",
        ]
        for cap in KEPT_CAPABILITIES:
            argv += ["--cap-add", cap]
        argv += ["--clearenv"]
        for key, value in SANDBOX_ENV.items():
            argv += ["--setenv", key, value]
        argv += ["--setenv", "ADAPT_WD", start_dir, "--chdir", "/",
                 "/bin/bash"]
        group = command_group(self.max_processes)
        if group is not None:  # the launcher joins the command's cgroup, then runs the rest
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group.procs), *argv]
        t0 = time.monotonic()
        # the working directory comes back on a pipe: nothing the command writes to it reaches
        # the host's disk, and writes never block (the command gets EAGAIN when it is full)
        pwd_read, pwd_write = os.pipe()
        try:
            os.set_blocking(pwd_write, False)
            argv += ["-c", _PROLOGUE.replace("{fd}", str(pwd_write)) + command, "/bin/bash"]
            try:
                proc = subprocess.Popen(
                    argv, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, pass_fds=(pwd_write,), start_new_session=True,
                    env=_LAUNCH_ENV,
                )
            finally:
                os.close(pwd_write)
            output, timed_out, truncated, pwd = self._collect(proc, t0, pwd_read)
        finally:
            os.close(pwd_read)
            if group is not None:
                group.remove()
        exit_code: int | None = None if (timed_out or truncated) else proc.returncode
        reported = pwd.decode("utf-8", "replace").strip().splitlines()
        new_cwd = reported[-1] if reported and reported[-1].startswith("/") else start_dir
        self.cwd = new_cwd
        return CommandResult(output=output, exit_code=exit_code, timed_out=timed_out,
                             truncated=truncated, cwd=new_cwd, seconds=time.monotonic() - t0)

    def _collect(self, proc: subprocess.Popen[bytes], t0: float, pwd_fd: int
                 ) -> tuple[bytes, bool, bool, bytes]:
        if proc.stdout is None:
            raise RuntimeError("the sandboxed command was started without a stdout pipe")
        chunks: list[bytes] = []
        size = 0
        pwd = b""
        timed_out = truncated = False
        fd = proc.stdout.fileno()
        watched = [fd, pwd_fd]
        deadline = t0 + self.timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select(watched, [], [], left)
                if pwd_fd in ready:
                    data = os.read(pwd_fd, 65536)
                    if data:
                        pwd = (pwd + data)[-MAX_PWD_BYTES:]
                    else:
                        watched.remove(pwd_fd)
                if fd not in ready:
                    continue
                data = os.read(fd, 65536)
                if not data:
                    break
                chunks.append(data)
                size += len(data)
                if size > self.max_output:
                    truncated = True
                    break
            if timed_out or truncated:
                _kill(proc)
            else:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill(proc)
        finally:
            proc.stdout.close()
            if proc.returncode is None:
                _kill(proc)
        pwd = (pwd + _drain(pwd_fd))[-MAX_PWD_BYTES:]
        output = b"".join(chunks)[: self.max_output]
        return output, timed_out, truncated, pwd

    def reset(self) -> None:
        """Discard every change: empty the upper layers, back to ``/``."""
        for sub in ("root", "usr"):
            shutil.rmtree(self.dir / sub, ignore_errors=True)
            (self.dir / sub / "up").mkdir(parents=True)
            (self.dir / sub / "work").mkdir()
        self.cwd = "/"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten episode must not leave its layer behind
        with contextlib.suppress(Exception):
            self.close()


def _where(tool: str) -> str:
    """The full path of ``tool`` on the worker's ``PATH`` (its name when it is not there: the
    launch then fails and says so)."""
    return shutil.which(tool) or tool


def _drain(fd: int, limit: int = 1 << 20) -> bytes:
    """What is waiting on the pipe ``fd`` now (without blocking), its last ``MAX_PWD_BYTES``."""
    os.set_blocking(fd, False)
    kept = b""
    seen = 0
    while seen < limit:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not data:
            break
        seen += len(data)
        kept = (kept + data)[-MAX_PWD_BYTES:]
    return kept


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the sandbox: its outer process group; bubblewrap's ``--die-with-parent`` then takes
    the PID namespace (and with it every process the command started) down."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)
