"""Sandbox limits a service needs (escape tests): processes per command (a fork bomb), memory
per process, and nothing written to the host through the working-directory report."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapt.envs.intercode_bash import InterCodeBash
from adapt.envs.intercode_bash.layers import Layers
from adapt.envs.intercode_bash.limits import pids_base
from adapt.envs.intercode_bash.sandbox import Sandbox

MAX_PROCESSES = 64


@pytest.fixture
def box(bash_layers: dict[int, Layers]) -> Iterator[Sandbox]:
    sandbox = Sandbox(bash_layers[4].stack, usr=bash_layers[4].usr, timeout=6,
                      max_processes=MAX_PROCESSES, max_memory=256 << 20)
    yield sandbox
    sandbox.close()


def needs_pids_cgroup() -> None:
    if pids_base() is None:
        pytest.skip("no writable pids cgroup controller on this host")


def host_processes() -> int:
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


def run_watched(box: Sandbox, command: str) -> tuple[str, bool, int, int, float]:
    """Run ``command``; meanwhile count the host's processes and time starting one there.
    Returns the output, whether it timed out, the count before, the peak and the slowest
    start."""
    baseline = host_processes()
    peak = baseline
    slowest = 0.0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak, slowest
        while not done.is_set():
            peak = max(peak, host_processes())
            t0 = time.monotonic()
            subprocess.run(["true"], check=True)
            slowest = max(slowest, time.monotonic() - t0)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = box.run(command, cwd="/")
    finally:
        done.set()
        watcher.join()
    return result.text, result.timed_out, baseline, peak, slowest


def test_a_command_cannot_start_more_processes_than_the_limit(box: Sandbox) -> None:
    needs_pids_cgroup()
    text, _timed_out, baseline, peak, _ = run_watched(
        box, "for i in $(seq 300); do sleep 4 & done; wait")
    assert "Resource temporarily unavailable" in text
    # at most the limit (plus what the host's other users started meanwhile)
    assert peak - baseline < MAX_PROCESSES + 60, (baseline, peak)


def test_a_fork_bomb_is_stopped_and_the_host_stays_responsive(box: Sandbox) -> None:
    needs_pids_cgroup()
    text, timed_out, baseline, peak, slowest = run_watched(
        box, "bomb() { bomb | bomb & }; bomb; sleep 3; echo the shell survived")
    assert timed_out or "survived" in text
    assert "Resource temporarily unavailable" in text
    assert peak - baseline < MAX_PROCESSES + 60, (baseline, peak)
    assert slowest < 1.0, slowest  # the host still starts processes at once
    time.sleep(0.5)
    assert host_processes() - baseline < 30  # the bomb is gone
    after = box.run("echo fine")
    assert after.text == "fine\n" and after.exit_code == 0


def test_allocating_more_than_the_memory_limit_fails_inside(box: Sandbox) -> None:
    small = box.run("python3 -c 'b = bytearray(64 << 20); print(len(b) >> 20)'")
    assert small.exit_code == 0 and small.text == "64\n", small.text
    big = box.run("python3 -c 'b = bytearray(512 << 20); print(len(b) >> 20)'")
    assert big.exit_code == 1 and "MemoryError" in big.text, big.text
    assert box.run("ulimit -v").text.strip() == str(256 << 10)


def test_the_working_directory_report_cannot_write_to_the_host(box: Sandbox) -> None:
    result = box.run("cd /tmp; for n in $(ls /proc/$$/fd); do [ \"$n\" -gt 2 ] && "
                     "head -c 10000000 /dev/zero >&$n 2>/dev/null; done; echo still here")
    assert result.exit_code == 0 and not result.timed_out, result.text
    assert "still here" in result.text
    uppers = {box.dir / "root" / "up", box.dir / "usr" / "up"}
    for folder, _dirs, files in os.walk(box.dir):
        if any(Path(folder).is_relative_to(u) for u in uppers):
            continue
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                assert path.stat().st_size < 8192, path
    assert box.run("pwd").text.strip() in ("/", "/tmp")


def test_the_environment_takes_its_limits_from_its_settings(
        bash_data: Path, bash_cache: Path, bash_layers: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAPT_BASH_COMMAND_MEMORY_MB", "128")
    monkeypatch.setenv("ADAPT_BASH_COMMAND_MAX_PROCESSES", "32")
    env = InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10)
    try:
        env.reset(fs=4, question="Print the memory limit.", gold="ulimit -v")
        assert env.step("execute[ulimit -v]").observation == str(128 << 10)
        assert env.step("submit").reward == 1.0  # the gold command runs under the same limit
        sandbox = env.run_gold(env._require_config())[0]
        try:
            assert sandbox.max_processes == 32 and sandbox.max_memory == 128 << 20
        finally:
            sandbox.close()
    finally:
        env.close()
