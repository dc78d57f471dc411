"""A command in the sandbox, the model's or the user's gold, never sees the worker's environment,
and cannot change the host's kernel settings through ``/proc/sys``."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from adapt.envs.intercode_bash import InterCodeBash, InterCodeBashConfig
from adapt.envs.intercode_bash.layers import Layers
from adapt.envs.intercode_bash.sandbox import Sandbox

SENTINEL = "sentinel-6c1f0e9d"
#: secret-looking variables of a worker (the ones the finding read, and a few more)
SECRET_NAMES = (
    "ADAPT_METRICS_TOKEN", "ADAPT_LLM_ENDPOINTS", "ADAPT_SQL_ADMIN_PASSWORD", "ADAPT_DATABASE_URL",
    "ADAPT_OPENAI_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
)
#: every way a command may look at an environment: its own, its parent's, PID 1's, everyone's
READS = (
    "tr '\\0' '\\n' < /proc/1/environ",
    "cat /proc/self/environ",
    "cat /proc/*/environ",
    "env",
    "cat /proc/$PPID/environ",
    "for p in /proc/[0-9]*; do echo \"== $p $(cat $p/comm)\"; tr '\\0' '\\n' < $p/environ; done",
    "grep -ra sentinel /proc/[0-9]*/environ /proc/[0-9]*/cmdline",
)
#: all of them in one command line (what a model could write in one step)
READ_ALL = "; ".join(READS)


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sentinel in secret-looking variables of the process that starts the sandboxes."""
    for i, name in enumerate(SECRET_NAMES):
        monkeypatch.setenv(name, f"{SENTINEL}-{i}")
    monkeypatch.setenv("ADAPT_LLM_ENDPOINTS",
                       f'[{{"base_url": "http://127.0.0.1:9/v1", "api_key": "{SENTINEL}-key"}}]')


def _assert_clean(text: str, command: str = "") -> None:
    assert SENTINEL not in text, command
    assert "ADAPT_" not in text.replace("ADAPT_WD", ""), command  # not even the names


def _config(gold: str) -> InterCodeBashConfig:
    return InterCodeBashConfig(fs=1, question="Show the environment.", gold=gold)


@pytest.mark.usefixtures("secrets")
def test_a_command_of_an_episode_cannot_read_the_workers_environment(bash_env: InterCodeBash
                                                                     ) -> None:
    bash_env.reset(fs=1, question="Show the environment.", gold="ls")
    for command in (*READS, READ_ALL):
        observation = bash_env.step(f"execute[{command}]").observation
        _assert_clean(observation, command)
        assert bash_env._last_output is not None
        _assert_clean(bash_env._last_output, command)  # all of it, not only what is shown


@pytest.mark.usefixtures("secrets")
def test_pid_1_is_readable_and_holds_only_the_minimal_environment(bash_env: InterCodeBash
                                                                  ) -> None:
    """Not vacuous: the reads succeed, and show the few variables the sandbox is given."""
    bash_env.reset(fs=1, question="Show the environment.", gold="ls")
    shown = bash_env.step("execute[echo pid1=$(cat /proc/1/comm); "
                          "tr '\\0' '\\n' < /proc/1/environ | sort]").observation
    assert "pid1=bwrap" in shown
    names = {line.split("=", 1)[0] for line in shown.splitlines()[1:] if "=" in line}
    assert {"PATH", "LANG", "HOME"} <= names <= {"PATH", "LANG", "HOME", "_"}, shown
    env = bash_env.step("execute[env | cut -d= -f1 | sort]").observation
    assert set(env.split()) <= {"PATH", "HOSTNAME", "HOME", "TERM", "PWD", "OLDPWD", "SHLVL",
                               "_"}, env


@pytest.mark.usefixtures("secrets")
def test_the_gold_command_cannot_read_the_workers_environment(bash_env: InterCodeBash) -> None:
    sandbox, output = bash_env.run_gold(_config(READ_ALL))
    sandbox.close()
    assert "PATH=" in output  # the reads ran
    _assert_clean(output)
    bash_env.reset(**_config(READ_ALL).model_dump())
    bash_env.step(f"execute[{READ_ALL}]")
    result = bash_env.step("submit")  # the gold runs again inside submit
    assert result.done
    _assert_clean(result.observation)


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        children = [p for p, parent in parents.items() if parent == pid]
        found += children
        todo += children
    return found


@pytest.mark.usefixtures("secrets")
def test_no_process_of_the_chain_holds_the_workers_environment(
    bash_layers: dict[int, Layers]
) -> None:
    """Seen from the host: the launchers outside the sandbox's PID namespace (the cgroup helper,
    ``unshare``, ``prlimit``, ``bwrap``) as well as the processes inside."""
    box = Sandbox(bash_layers[1].stack, timeout=10, usr=bash_layers[1].usr)
    seen: dict[int, bytes] = {}
    thread = threading.Thread(target=box.run, args=("sleep 2",))
    try:
        thread.start()
        deadline = time.monotonic() + 8
        while thread.is_alive() and time.monotonic() < deadline:
            for pid in _descendants(os.getpid()):
                try:
                    seen[pid] = Path(f"/proc/{pid}/environ").read_bytes()
                except OSError:
                    continue
            time.sleep(0.05)
        thread.join()
    finally:
        box.close()
    assert len(seen) >= 3, seen  # bwrap outside, bwrap as PID 1 inside, bash, sleep
    for pid, environ in seen.items():
        assert SENTINEL.encode() not in environ, (pid, environ)
        assert b"ADAPT_METRICS_TOKEN" not in environ, (pid, environ)


def test_proc_sys_is_read_only_inside(bash_layers: dict[int, Layers]) -> None:
    """Root in the sandbox must not set the host's kernel parameters (``kernel.core_pattern``
    would run a program of its choice on the host). The write tried writes back the value it
    read, of the sandbox's own UTS namespace: harmless even where it succeeds."""
    box = Sandbox(bash_layers[1].stack, timeout=10, usr=bash_layers[1].usr)
    try:
        result = box.run(
            "v=$(cat /proc/sys/kernel/hostname); echo \"$v\" > /proc/sys/kernel/hostname; "
            "echo now=$(hostname); "
            "test -w /proc/sys/kernel/core_pattern && echo core_pattern writable; "
            "test -w /proc/sys/vm/drop_caches && echo drop_caches writable; "
            "grep -c ' /proc/sys ro,' /proc/self/mountinfo"
        )
    finally:
        box.close()
    assert "Read-only file system" in result.text, result.text
    assert "now=intercode" in result.text
    assert "writable" not in result.text
