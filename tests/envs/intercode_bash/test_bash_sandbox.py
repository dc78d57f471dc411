"""Sandbox escape tests: a command cannot write outside its layer, reach the network, see the
host's processes, or outlive its time limit; output is bounded; the working directory persists."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from adapt.envs.intercode_bash.layers import Layers
from adapt.envs.intercode_bash.sandbox import Sandbox


@pytest.fixture
def box(bash_layers: dict[int, Layers]) -> Sandbox:
    sandbox = Sandbox(bash_layers[1].stack, timeout=5, max_output=64 * 1024,
                      usr=bash_layers[1].usr)
    yield sandbox
    sandbox.close()


def test_writes_stay_in_the_upper_layer(box: Sandbox, bash_layers: dict[int, Layers],
                                        tmp_path: Path) -> None:
    host_file = tmp_path / "host.txt"
    host_file.write_text("host\n")
    before_usr = os.stat("/usr/bin/env").st_mtime
    result = box.run(
        f"echo pwned > {host_file}; echo pwned > /usr/bin/env; rm -rf /testbed/dir1; "
        "echo new > /testbed/new.txt; mkdir -p /work /root/x && echo pwned > /work/x; "
        "cat /usr/bin/env; ls /testbed"
    )
    assert "pwned" in result.text  # inside, the writes happened
    assert "dir1" not in result.text
    assert host_file.read_text() == "host\n"  # outside, nothing changed
    assert os.stat("/usr/bin/env").st_mtime == before_usr
    assert b"pwned" not in Path("/usr/bin/env").read_bytes()
    assert (bash_layers[1].fs_layer / "testbed" / "dir1").is_dir()
    assert not (bash_layers[1].fs_layer / "testbed" / "new.txt").exists()
    assert (box.upper / "testbed" / "new.txt").read_text() == "new\n"
    # another episode of the same file system sees none of it
    other = Sandbox(bash_layers[1].stack, timeout=5, usr=bash_layers[1].usr)
    try:
        seen = other.run("ls /testbed; cat /testbed/new.txt; cat /usr/bin/env | head -c 4 | od -c")
        assert "dir1" in seen.text and "No such file" in seen.text and "pwned" not in seen.text
    finally:
        other.close()
    # reset discards every change
    box.reset()
    assert "dir1" in box.run("ls /testbed").text


def test_host_files_outside_the_root_are_invisible(box: Sandbox) -> None:
    result = box.run("ls /work /farm /home /root /tmp 2>&1; cat /etc/shadow; "
                     "ls /etc/ssh /etc/mysql 2>&1; echo done")
    assert "wt-20" not in result.text and "shared" not in result.text
    assert "No such file" in result.text
    assert result.text.strip().endswith("done")


def test_no_network(box: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(3)

    def accept() -> None:
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    t = threading.Thread(target=accept)
    t.start()
    try:
        result = box.run(f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1 && echo CONNECTED; "
                         "awk -F: 'NR > 2 {print $1 \":\"}' /proc/net/dev; "
                         "curl -s -m 3 http://deb.debian.org/ >/dev/null 2>&1 || echo NO_WEB")
    finally:
        t.join()
        server.close()
    assert accepted == []  # the host's loopback server was never reached
    assert "CONNECTED" not in result.text
    assert "NO_WEB" in result.text
    assert "lo:" in result.text and "eth" not in result.text and "ens" not in result.text


def test_host_processes_are_invisible(box: Sandbox) -> None:
    host = subprocess.Popen(["sleep", "60"])
    try:
        result = box.run("for p in /proc/[0-9]*; do echo ${p#/proc/} $(cat $p/comm); done; "
                         f"kill -9 {host.pid} 2>&1; echo pid1=$(cat /proc/1/comm)")
        assert host.poll() is None  # the kill could not reach it
        pids = [line.split()[0] for line in result.text.splitlines()
                if line.strip() and line.split()[0].isdigit()]
        assert len(pids) < 10, result.text
        assert "pid1=bwrap" in result.text
        assert "sleep" not in result.text.split("pid1=")[0]
    finally:
        host.kill()
        host.wait()


def test_a_command_cannot_outlive_its_time_limit(box: Sandbox) -> None:
    t0 = time.monotonic()
    result = box.run("echo started; (sleep 7; touch /testbed/late1) & disown; "
                     "setsid sh -c 'sleep 7; touch /testbed/late2' >/dev/null 2>&1 </dev/null & "
                     "nohup sh -c 'sleep 7; touch /testbed/late3' >/dev/null 2>&1 &")
    assert result.timed_out and result.exit_code is None  # detached jobs hold it to the limit
    assert 5 <= time.monotonic() - t0 < 5 + 3
    assert "started" in result.text
    time.sleep(3.5)  # had anything survived the kill, it would have written by now
    for name in ("late1", "late2", "late3"):
        assert not (box.upper / "testbed" / name).exists()
    assert "late" not in box.run("ls /testbed").text


def test_background_jobs_finish_before_the_command_returns(box: Sandbox) -> None:
    t0 = time.monotonic()
    result = box.run("setsid sh -c 'sleep 1; echo done > /testbed/bg' >/dev/null 2>&1 </dev/null &")
    assert not result.timed_out and result.exit_code == 0
    assert time.monotonic() - t0 >= 1  # as a Docker exec, the command ends with its last job
    assert (box.upper / "testbed" / "bg").read_text() == "done\n"


def test_output_is_bounded(box: Sandbox) -> None:
    result = box.run("yes")
    assert result.truncated and not result.timed_out
    assert len(result.output) == 64 * 1024


def test_working_directory_persists(box: Sandbox) -> None:
    assert box.run("cd /testbed/dir1 && pwd").text == "/testbed/dir1\n"
    assert box.run("pwd; ls").text.startswith("/testbed/dir1\n")
    box.run("cd subdir1; exit 3")
    assert box.cwd == "/testbed/dir1/subdir1"
    box.run("cd /nowhere")
    assert box.cwd == "/testbed/dir1/subdir1"
    box.run("rm -rf /testbed/dir1")  # the folder disappears: the next command starts at /
    assert box.run("pwd").text == "/\n"


def test_no_privileges_beyond_the_files(box: Sandbox) -> None:
    result = box.run("mknod /dev/vda-copy b 254 0 2>&1; mount -t tmpfs none /mnt 2>&1; "
                     "grep CapEff /proc/self/status; echo end")
    assert "Operation not permitted" in result.text or "Permission denied" in result.text
    assert "must be superuser" in result.text or "permission denied" in result.text.lower()
    cap_eff = int(result.text.split("CapEff:")[1].split()[0], 16)
    assert cap_eff & (1 << 21) == 0  # no CAP_SYS_ADMIN
    assert cap_eff & (1 << 27) == 0  # no CAP_MKNOD
