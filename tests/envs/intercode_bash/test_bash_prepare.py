"""Preparing the file systems: from several processes at once, from the command line (again:
nothing to do), by the environment on first use, and the errors that name what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapt.envs.intercode_bash import InterCodeBash
from adapt.envs.intercode_bash.layers import LAYOUT_VERSION, Layers, load_prepared, prepare
from adapt.envs.intercode_bash.sandbox import Sandbox, check_sandbox
from adapt.errors import UserError

#: prepare file system 4 (the smallest) at a given moment, print what was said and the result
_PREPARE = """
import sys, time
from adapt.envs.intercode_bash.layers import prepare
start = float(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
layers = prepare(sys.argv[1], sys.argv[2], file_systems=[4], progress=print)
print("OK", len(layers[4].manifest.entries))
"""


def adapt_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adapt.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=300, check=False)


def check_layer(cache: Path) -> None:
    """The prepared file system 4 is whole and usable, and nothing temporary is left."""
    layers = load_prepared(cache, 4)
    assert layers is not None
    base = cache / f"v{LAYOUT_VERSION}"
    assert sorted(p.name for p in base.iterdir() if ".tmp-" in p.name or ".old-" in p.name) == []
    with Sandbox(layers.stack, usr=layers.usr, timeout=10) as box:
        result = box.run("cat /etc/hostname; ls /.gitignore; command -v jq")
    assert result.exit_code == 0, result.text
    assert result.text.split() == ["intercode", "/.gitignore", "/usr/bin/jq"]


def test_two_processes_prepare_the_same_cache_at_once(bash_data: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    start = time.time() + 3.0  # both have imported adapt by then
    procs = [subprocess.Popen([sys.executable, "-c", _PREPARE, str(bash_data), str(cache),
                               str(start)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out
        assert out.splitlines()[-1].startswith("OK "), out
    # one built, the other waited for it and found everything ready
    waited = [o for o in outputs if "waiting for another process" in o]
    assert len(waited) == 1, outputs
    assert "running setup_nl2b_fs_4.sh" not in waited[0]
    assert "nothing to do" in waited[0]
    check_layer(cache)


def test_leftovers_of_a_killed_preparation_are_removed(bash_data: Path, bash_cache: Path,
                                                      bash_layers: object) -> None:
    base = bash_cache / f"v{LAYOUT_VERSION}"
    (base / ".usr.tmp-abc123" / "usr" / "bin").mkdir(parents=True)
    (base / ".fs4.json.tmp-xyz").write_text("{", encoding="utf-8")
    prepare(bash_data, bash_cache, file_systems=[4])
    assert not (base / ".usr.tmp-abc123").exists() and not (base / ".fs4.json.tmp-xyz").exists()


def test_a_failing_setup_script_is_named(bash_data: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "setup_nl2b_fs_4.sh").write_text(
        "#!/bin/bash\nmkdir -p /data\necho filling /data\ncp /nowhere/seed.txt /data/\n"
        "exit 3\n", encoding="utf-8")
    cache = tmp_path / "cache"
    with pytest.raises(UserError) as info:
        prepare(data, cache, file_systems=[4])
    message = str(info.value)
    assert "the setup script setup_nl2b_fs_4.sh" in message
    assert "exited with status 3" in message
    assert "/nowhere/seed.txt" in message  # the end of its output says which step failed
    assert load_prepared(cache, 4) is None
    assert not (cache / f"v{LAYOUT_VERSION}" / "fs4").exists()


def test_prepare_bash_command_then_again(bash_data: Path, tmp_path: Path) -> None:
    env = {"ADAPT_BASH_CACHE_DIR": str(tmp_path / "cache")}
    first = adapt_cli("data", "prepare-bash", str(bash_data), "--fs", "4", env=env)
    assert first.returncode == 0, first.stderr
    for said in ("building the skeleton root", "into the /usr layer",
                 "file system 4: running setup_nl2b_fs_4.sh", "file system 4: "):
        assert said in first.stderr, first.stderr
    layer = tmp_path / "cache" / f"v{LAYOUT_VERSION}" / "fs4"
    built = layer.stat().st_ino
    second = adapt_cli("data", "prepare-bash", str(bash_data), "--fs", "4", env=env)
    assert second.returncode == 0, second.stderr
    assert "nothing to do" in second.stderr
    assert "running" not in second.stderr and "building" not in second.stderr
    assert "file system 4: ready" in second.stderr
    assert layer.stat().st_ino == built  # not rebuilt
    check_layer(tmp_path / "cache")


def test_missing_bubblewrap_names_the_install_command(bash_data: Path, tmp_path: Path) -> None:
    tools = tmp_path / "bin"  # every sandbox tool but bubblewrap
    tools.mkdir()
    for name in ("unshare", "mount", "prlimit", "bash", "sh", "dpkg-query"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    env = {"PATH": str(tools), "ADAPT_BASH_CACHE_DIR": str(tmp_path / "cache")}
    out = adapt_cli("data", "prepare-bash", str(bash_data), "--fs", "4", env=env)
    assert out.returncode != 0
    text = " ".join(out.stderr.split())
    assert "needs bwrap" in text and "apt-get install -y bubblewrap" in text, out.stderr


def test_the_environment_prepares_what_is_missing(bash_data: Path, tmp_path: Path) -> None:
    cache = tmp_path / "empty-cache"
    env = InterCodeBash(data_dir=bash_data, cache_dir=cache, timeout=10)
    try:
        env.reset(fs=4, question="Print the hostname.", gold="hostname")
        assert env.step("execute[hostname]").observation == "intercode"
        assert env.step("submit").reward == 1.0
    finally:
        env.close()
    check_layer(cache)


def test_a_refused_sandbox_names_what_the_container_needs(
        bash_layers: dict[int, Layers], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub = tmp_path / "bin"  # what `unshare` says in a container without CAP_SYS_ADMIN
    stub.mkdir()
    (stub / "unshare").write_text(
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    (stub / "unshare").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub}:{os.environ['PATH']}")
    layers = bash_layers[4]
    with pytest.raises(UserError) as info:
        check_sandbox(layers.stack, layers.usr)
    message = str(info.value)
    assert "Operation not permitted" in message and "CAP_SYS_ADMIN" in message
    assert "docs/deployment.md" in message


def test_prepared_file_systems_without_bubblewrap(bash_cache: Path, bash_layers: object,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("unshare", "mount", "prlimit", "bash", "sh"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("ADAPT_BASH_DATA_DIR", raising=False)
    env = InterCodeBash(cache_dir=bash_cache, timeout=10)
    with pytest.raises(UserError, match=r"needs bwrap.*apt-get install -y bubblewrap"):
        env.reset(fs=4, question="Print the hostname.", gold="hostname")
