"""The client of adapt's environment protocol (adapt/envs/remote/client.py) against the server
of ``adapt env serve``: the conformance kit over HTTP, trees equal to the in-process
environment's (20 games through the real ``adapt env serve textcraft``), sessions the server
lost replayed with nothing applied twice, lost answers asked again, a server that stays down."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs import registry
from adapt.envs.base import Environment
from adapt.envs.remote import CallLimits, RemoteSpec, install, remote_policy
from adapt.envs.testing import CHECKS, check_environment
from adapt.envs.textcraft import TextCraft
from adapt.envserve import create_app
from adapt.errors import EnvironmentUnavailable, RemoteEnvironmentError
from adapt.sim import from_spec
from tests.support.envserver import env_server, free_port, serve_app

SIM = "sim:textcraft?capability=1"
LOOPBACK = remote_policy(["127.0.0.1/32"])


def remote(url: str, name: str = "textcraft", **limits: float) -> type[Environment]:
    install([RemoteSpec(name, url)], LOOPBACK, CallLimits(**limits) if limits else None)
    return registry.get(name)


def tree(sink: MemorySink) -> dict[str, Any]:
    """What a run shows: nodes, steps, and every prompt and completion."""
    return {"nodes": {i: n.model_dump(mode="json") for i, n in sink.nodes.items()},
            "steps": {i: [s.model_dump(mode="json") for s in ss] for i, ss in sink.steps.items()},
            "calls": [(c.prompt, c.completion) for c in sink.calls]}


async def run(env: Environment, config: dict[str, Any], **run_config: Any) -> tuple[str, dict]:
    sink = MemorySink()
    try:
        result = await run_task(env, config, RunConfig(**{"d_max": 4, **run_config}),
                                from_spec(SIM), sink=sink)
    finally:
        env.close()
    return result.status, tree(sink)


def test_the_conformance_kit_passes_over_http(textcraft_url: str) -> None:
    report = check_environment(remote(textcraft_url), configs=[{"seed": 3}, {
        "goal": "craft stick"}], actions=["inventory", "get 2 bamboo", "craft 1 stick using "
                                          "2 bamboo"])
    assert report.passed[-1] == "close" and report.passed == list(CHECKS)  # every check, in order


@pytest.mark.slow
def test_adapt_env_serve_textcraft_gives_the_in_process_trees_for_20_games(
        tmp_path: Path) -> None:
    with env_server("textcraft", tmp_path / "serve.log") as server:
        env_class = remote(server.url)

        async def compare() -> list[str]:
            differ = []
            for seed in range(20):
                strategy = "adapt" if seed % 4 else "try_again"
                local = await run(TextCraft(), {"seed": seed}, strategy=strategy)
                served = await run(env_class(), {"seed": seed}, strategy=strategy)
                if served != local:
                    differ.append(f"seed {seed}: {local[0]} in process, {served[0]} remote")
            return differ

        assert asyncio.run(compare()) == []
        applied = server.applied()  # (session, change number) -> times applied
        assert applied and max(applied.values()) == 1


async def test_a_session_the_server_lost_is_replayed_and_the_task_goes_on() -> None:
    app = create_app(TextCraft)
    store = app.state.store
    with serve_app(app) as url:
        env_class = remote(url)
        want = await run(TextCraft(), {"seed": 11})
        env = env_class()
        original = env.step

        def step_and_lose(action: str) -> Any:
            result = original(action)
            if env._seq in (3, 9):  # the server forgets every session (an idle timeout)
                store.close_all()
            return result

        env.step = step_and_lose  # type: ignore[method-assign]
        assert await run(env, {"seed": 11}) == want
        counters = store.counters
        assert counters.created == 3 and counters.repeated == 0


async def test_a_lost_answer_is_asked_again_and_the_step_applied_once() -> None:
    app = create_app(TextCraft)
    store = app.state.store
    lost: list[int] = []

    async def losing(scope: Any, receive: Any, send: Any) -> None:
        """Every 4th step is applied, then its answer is lost (the server fails before it
        sends it)."""
        if scope["type"] != "http" or not scope["path"].endswith("/steps"):
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        answer: list[Any] = []

        async def keep(message: Any) -> None:
            answer.append(message)

        before = store.counters.applied
        await app(scope, replay, keep)
        if store.counters.applied > before and store.counters.applied % 4 == 0:
            lost.append(store.counters.applied)
            raise ConnectionResetError("the answer is lost")
        for message in answer:
            await send(message)

    with serve_app(losing) as url:
        env_class = remote(url)
        assert await run(env_class(), {"seed": 11}) == await run(TextCraft(), {"seed": 11})
    assert lost and store.counters.repeated >= len(lost)
    assert store.counters.created == 1  # no new session was needed


def test_a_server_that_stays_down_is_named_never_its_address() -> None:
    port = free_port()
    install([RemoteSpec("crafts", f"http://127.0.0.1:{port}")], LOOPBACK,
            CallLimits(timeout=1, retry_seconds=0.5))
    started = time.monotonic()
    with pytest.raises(EnvironmentUnavailable) as caught:
        registry.get("crafts")
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert "'crafts'" in message and str(port) not in message and "127.0.0.1" not in message


HOSTILE = "Traceback (most recent call last):\n  File \"/srv/secret.py\"\x1b[31m" + "A" * 5000


def _hostile_app(status: int) -> Starlette:
    meta = {"name": "hostile", "config_schema": {"type": "object"}, "action_grammar": "x"}
    session = {"session": "s1", "observation": "Goal: x", "goal": "x",
               "prompts": {"executor": "$task", "planner": "$task"}}

    async def answer(request: Request) -> Response:
        path = request.url.path
        if path == "/v1/environment":
            import json

            return Response(json.dumps(meta), media_type="application/json")
        if path == "/v1/sessions":
            import json

            return Response(json.dumps(session), status_code=201,
                            media_type="application/json")
        if status < 500:  # a problem document whose detail is long and hostile
            import json

            body = {"type": "urn:adapt:env-problem:bad-action", "status": status,
                    "detail": HOSTILE}
            return Response(json.dumps(body), status_code=status,
                            media_type="application/problem+json")
        return Response(HOSTILE, status_code=status)

    return Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "DELETE"])])


@pytest.mark.parametrize("status", [500, 418])
def test_a_servers_errors_and_bodies_never_reach_the_task_verbatim(status: int) -> None:
    with serve_app(_hostile_app(status)) as url:
        env = remote(url, "hostile", timeout=2, retry_seconds=0.3)()
        env.reset()
        with pytest.raises((RemoteEnvironmentError, EnvironmentUnavailable)) as caught:
            env.step("look")
        env.close()
    message = str(caught.value)
    assert "'hostile'" in message and len(message) < 300, message
    assert "\x1b" not in message and "A" * 200 not in message
    assert ("secret.py" in message) == (status < 500), message  # a 4xx: a short excerpt only


def test_an_answer_larger_than_the_limit_is_refused_unread(textcraft_url: str) -> None:
    install([RemoteSpec("textcraft", textcraft_url)], LOOPBACK,
            CallLimits(max_answer_bytes=2048))  # TextCraft's metadata holds more
    with pytest.raises(RemoteEnvironmentError, match="larger than 2048 bytes"):
        registry.get("textcraft")
