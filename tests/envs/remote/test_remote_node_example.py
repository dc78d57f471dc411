"""The Node example (examples/env-server-node/server.mjs, plain node:http) speaks adapt's
environment protocol: the conformance kit drives it over HTTP, and a task runs on it.

CI has Node (``.ci/run`` installs it where it is missing): under ``CI`` a missing ``node`` fails
this test; elsewhere it is skipped with the reason."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs import registry
from adapt.envs.base import Environment
from adapt.envs.remote import RemoteSpec, install, remote_policy
from adapt.envs.testing import CHECKS, check_environment
from adapt.llm.testing import ScriptedModel
from tests.support.envserver import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[3]
SERVER = ROOT / "examples" / "env-server-node" / "server.mjs"


@pytest.fixture(scope="module")
def lamps_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed: CI runs the Node example's conformance test "
                        "(.ci/run installs nodejs)")
        pytest.skip("node is not installed (apt-get install nodejs)")
    port = free_port()
    log = tmp_path_factory.mktemp("node") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([node, str(SERVER), str(port)], stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", 30, proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def lamps(url: str) -> type[Environment]:
    install([RemoteSpec("lamps", url)], remote_policy(["127.0.0.1/32"]))
    return registry.get("lamps")


def test_the_node_example_passes_the_conformance_kit_over_http(lamps_url: str) -> None:
    report = check_environment(lamps(lamps_url), actions=["look", "toggle 1", "toggle 2"],
                               configs=[{"seed": 3}, {"seed": 4, "lamps": 7}, {}])
    assert report.passed == list(CHECKS)  # every check, in order


def test_a_task_runs_on_the_node_example(lamps_url: str) -> None:
    env = lamps(lamps_url)()
    first = env.reset(seed=3)
    wanted = [int(n) for n in env.goal.removeprefix("turn on lamps ").split(" and")[0]
              .split(", ")]
    env.close()
    model = ScriptedModel([f"toggle {n}" for n in wanted])
    sink = MemorySink()
    result = asyncio.run(run_task(lamps(lamps_url)(), {"seed": 3}, RunConfig(strategy="react"),
                                  model, sink=sink))
    assert first.startswith("Lamps: 1 off")
    assert result.status == "succeeded" and result.reward == 1.0
    assert result.verdict == "confirmed"


def test_the_node_example_applies_a_change_number_once(lamps_url: str) -> None:
    created = httpx.post(f"{lamps_url}/v1/sessions", json={"config": {"seed": 1}}).json()
    steps = f"{lamps_url}/v1/sessions/{created['session']}/steps"
    first = httpx.post(steps, json={"seq": 1, "action": "toggle 1"}).json()
    again = httpx.post(steps, json={"seq": 1, "action": "toggle 1"}).json()
    assert first["observation"] == again["observation"] == "Lamp 1 is now on."
    assert again["repeated"] is True
    gap = httpx.post(steps, json={"seq": 3, "action": "look"})
    assert gap.status_code == 409 and gap.json()["type"].endswith("sequence-conflict")
