"""The environment of a process started for a task is built from nothing."""

from __future__ import annotations

import subprocess

import pytest

from adapt.envs.processes import SYSTEM_PATH, minimal_environment


def test_nothing_comes_from_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAPT_METRICS_TOKEN", "sentinel-processes")
    monkeypatch.setenv("PATH", "/worker/bin:/usr/bin")
    monkeypatch.setenv("HOME", "/home/worker")
    assert minimal_environment() == {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
    assert minimal_environment(home="/root", lang=None, extra={"MYSQL_PWD": "pw"}) == {
        "PATH": SYSTEM_PATH, "HOME": "/root", "MYSQL_PWD": "pw"}
    seen = subprocess.run(["env"], env=minimal_environment(), capture_output=True, text=True,
                          check=True).stdout
    assert "sentinel-processes" not in seen and "/worker" not in seen


@pytest.mark.parametrize("extra", [{"": "x"}, {"A=B": "x"}, {"A": "x\0y"}, {"A\0": "x"}])
def test_what_cannot_be_a_variable_is_refused(extra: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="not an environment variable"):
        minimal_environment(extra=extra)
