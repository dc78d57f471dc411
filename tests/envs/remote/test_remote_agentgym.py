"""The AgentGym client (adapt/envs/remote/agentgym.py) against AgentGym's own TextCraft server
(the unmodified peer in ``../shared/peers/agentgym-textcraft``, started here): the conformance
kit over HTTP, ADaPT with the simulated model solving the same games as adapt's in-process
TextCraft playing the same listings, a restarted peer replayed, and a task through the
service."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs import registry
from adapt.envs.base import Environment
from adapt.envs.remote import RemoteSpec, install, remote_policy
from adapt.envs.testing import CHECKS, check_environment
from adapt.envs.textcraft import TextCraft
from adapt.settings import Settings
from adapt.sim import from_spec
from api.main import create_app
from tests.api.apiutil import parse_sse
from tests.support.agentgym_peer import Peer, peer_dir_or_skip

pytestmark = pytest.mark.slow

SIM = "sim:textcraft?capability=1"
#: games of the peer (its data_idx): depth 1 to 4, the published games' goals among them
#: (534: polished granite stairs, ADaPT's env_0)
GAMES = [5, 100, 200, 300, 400, 450, 500, 520, 534, 543]


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    running = Peer(peer_dir_or_skip(), tmp_path_factory.mktemp("peer") / "server.log")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def gym(peer: Peer, name: str = "textcraft-gym") -> type[Environment]:
    install([RemoteSpec(name, peer.url, protocol="agentgym", family="textcraft")],
            remote_policy(["127.0.0.1/32"]))
    return registry.get(name)


def listing(observation: str) -> dict[str, Any]:
    """The in-process TextCraft config of the peer's game: its goal and command lines."""
    head, _, goal = observation.rpartition("\n\nGoal: ")
    return {"goal": goal.rstrip("."), "commands": head.split("\n")[1:]}


def test_the_conformance_kit_passes_over_agentgyms_protocol(peer: Peer) -> None:
    report = check_environment(gym(peer), configs=[{"data_idx": 5}, {"data_idx": 100}],
                               actions=["inventory", "get 1 iron ingot", "get 1 flint"])
    assert report.passed == list(CHECKS)  # every check, in order


async def _outcome(env: Environment, config: dict[str, Any]) -> tuple[str, list[str]]:
    sink = MemorySink()
    try:
        result = await run_task(env, config, RunConfig(d_max=4, verification="off"),
                                from_spec(SIM), sink=sink)
    finally:
        env.close()
    actions = [s.text for ss in sink.steps.values() for s in ss if s.kind == "action"]
    return result.status, actions


def test_adapt_solves_the_same_games_on_the_peer_as_in_process(peer: Peer) -> None:
    env_class = gym(peer)

    async def compare() -> dict[int, tuple[Any, Any]]:
        out = {}
        for index in GAMES:
            probe = env_class()
            first = probe.reset(data_idx=index)
            probe.close()
            out[index] = (await _outcome(env_class(), {"data_idx": index}),
                          await _outcome(TextCraft(), listing(first)))
        return out

    results = asyncio.run(compare())
    solved = {i for i, (remote, _) in results.items() if remote[0] == "succeeded"}
    assert {i for i, (_, local) in results.items() if local[0] == "succeeded"} == solved
    assert len(solved) == len(GAMES), results
    # the same decisions: the simulated model read the same prompts and observations
    assert all(remote[1] == local[1] for remote, local in results.values())


def test_a_restarted_peer_is_replayed_and_the_episode_goes_on(peer: Peer) -> None:
    env = gym(peer)()
    plain = gym(peer, "plain")()
    try:
        env.reset(data_idx=100)
        plain.reset(data_idx=100)
        for action in ("get 1 iron ingot", "get 1 flint"):
            env.step(action)
            plain.step(action)
        peer.stop()
        peer.start()  # the same port; the episode's id is unknown to the new process
        crafted = env.step("craft 1 flint and steel using 1 iron ingot, 1 flint")
        assert (crafted.observation, crafted.reward, crafted.done) == (
            "Crafted 1 minecraft:flint_and_steel", 1.0, True)
        assert env.salient_state() == "Inventory: [flint and steel] (1) "
    finally:
        env.close()
        plain.close()


@contextlib.asynccontextmanager
async def api(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        yield client


async def test_a_task_on_the_peer_runs_end_to_end_through_the_service(
        peer: Peer, sqlite_url: str) -> None:
    settings = Settings.model_validate({
        "ADAPT_DATABASE_URL": sqlite_url,
        "remote_environments": {"textcraft-gym": {
            "url": peer.url, "protocol": "agentgym", "family": "textcraft"}},
        "remote_environment_allowed_networks": ["127.0.0.1/32"]})
    async with api(settings) as client:
        listed = (await client.get("/environments")).json()["items"]
        schema = next(e for e in listed if e["name"] == "textcraft-gym")["config_schema"]
        assert list(schema["properties"]) == ["data_idx"]
        bad = await client.post("/tasks", json={"environment": "textcraft-gym",
                                                "environment_config": {"seed": 3}})
        assert bad.status_code == 422
        created = await client.post("/tasks", json={
            "environment": "textcraft-gym", "environment_config": {"data_idx": 534},
            "d_max": 4})  # the paper's TextCraft depth
        assert created.status_code == 202, created.text
        task_id = created.json()["id"]
        events, _ = parse_sse((await client.get(f"/tasks/{task_id}/events")).text)
        assert events[-1].event == "task.finished"
        task = (await client.get(f"/tasks/{task_id}")).json()
        assert task["status"] == "succeeded", task
        assert task["resolved_goal"] == "craft polished granite stairs"
        tree = (await client.get(f"/tasks/{task_id}/tree")).json()
        assert tree["tree"]["success"] and tree["nodes_count"] > 1


def test_closed_episodes_are_closed_on_the_peer(peer: Peer) -> None:
    env = gym(peer)()
    env.reset(data_idx=5)
    env_id = env._id  # type: ignore[attr-defined]
    env.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # closed in a thread of its own
        detail = httpx.get(f"{peer.url}/detail", params={"id": env_id}).json()
        if detail.get("deleted") or "error" in detail:
            return
        time.sleep(0.05)
    raise AssertionError(f"episode {env_id} was not closed")
