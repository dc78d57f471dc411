"""Remote environments through the service: registered by the operator (never named by a
user), checked by the outbound address policy at registration and before every request, listed
by ``GET /environments``, validated at submission, and run end to end by the embedded worker
with the tree of the in-process environment."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs import registry
from adapt.envs.remote import RemoteSpec, install, remote_policy
from adapt.envs.remote import transport as remote_transport
from adapt.envs.textcraft import TextCraft
from adapt.errors import OutboundRefused, RemoteEnvironmentError
from adapt.settings import Settings
from adapt.sim import from_spec
from api.main import create_app
from tests.api.apiutil import parse_sse
from tests.service.helpers import persisted_tree
from tests.service.test_execute import as_persisted
from tests.support.api import FakeDispatcher, make_settings
from tests.support.envserver import free_port

SIM = "sim:textcraft?capability=1"


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Names of ``*.example.test`` resolve to what the test puts in the returned dict."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port or 0))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    yield answers


def test_registration_refuses_what_the_operator_did_not_allow(
        fake_dns: dict[str, str]) -> None:
    for url in ("http://127.0.0.1:8100", "http://localhost:8100", "http://169.254.169.254/",
                "http://[::ffff:10.0.0.1]:80", "file:///etc/passwd"):
        with pytest.raises(OutboundRefused):
            install([RemoteSpec("textcraft", url)], remote_policy())
    fake_dns["envs.example.test"] = "10.1.2.3"
    with pytest.raises(OutboundRefused) as caught:
        install([RemoteSpec("textcraft", "http://envs.example.test:8100")], remote_policy())
    assert "10.1.2.3" not in str(caught.value)  # the resolved address goes to the log only
    assert registry.remote_entries() == {}
    install([RemoteSpec("textcraft", "http://envs.example.test:8100")],
            remote_policy(["10.0.0.0/8"]))  # the operator allows the network
    assert list(registry.remote_entries()) == ["textcraft"]


def test_a_name_that_resolves_to_a_refused_address_later_is_refused_before_sending(
        fake_dns: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns["envs.example.test"] = "93.184.216.34"  # public when registered
    install([RemoteSpec("textcraft", "http://envs.example.test:8100")], remote_policy())
    sent: list[str] = []
    monkeypatch.setattr(remote_transport, "send_pinned",
                        lambda *args, **kwargs: sent.append(args[2]))
    fake_dns["envs.example.test"] = "169.254.169.254"  # the cloud metadata address now
    with pytest.raises(RemoteEnvironmentError) as caught:
        registry.get("textcraft")
    assert sent == []
    assert "169.254" not in str(caught.value) and "'textcraft'" in str(caught.value)


@contextlib.asynccontextmanager
async def api(settings: Settings, dispatcher: FakeDispatcher) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, dispatcher=dispatcher)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


@pytest.fixture
def remote_settings(database_url: str, textcraft_url: str) -> Settings:
    return make_settings(database_url, remote_environments={"textcraft": {"url": textcraft_url}},
                         remote_environment_allowed_networks=["127.0.0.1/32"])


async def test_users_name_registered_environments_never_urls(remote_settings: Settings,
                                                             textcraft_url: str) -> None:
    dispatcher = FakeDispatcher()
    async with api(remote_settings, dispatcher) as client:
        listed = (await client.get("/environments")).json()["items"]
        served = next(e for e in listed if e["name"] == "textcraft")
        assert served["config_schema"] == TextCraft.config_model.model_json_schema()
        for environment, config, field in (
                (textcraft_url, {"seed": 1}, "environment"),
                (f"{textcraft_url}/v1", {"seed": 1}, "environment"),
                ("textcraft", {"seed": 1, "url": "http://10.0.0.1/"}, "environment_config"),
                ("textcraft", {"seed": "x"}, "environment_config")):
            refused = await client.post("/tasks", json={
                "environment": environment, "environment_config": config})
            assert refused.status_code == 422, refused.text
            assert refused.json()["errors"][0]["field"] == field, refused.text
        ok = await client.post("/tasks", json={"environment": "textcraft",
                                               "environment_config": {"seed": 1}})
        assert ok.status_code == 202 and len(dispatcher.dispatched) == 1


async def test_a_registered_server_that_does_not_answer_is_a_503(database_url: str) -> None:
    settings = make_settings(database_url, remote_environment_allowed_networks=["127.0.0.1/32"],
                             remote_environments={"down": {"url": f"http://127.0.0.1:{free_port()}"}})
    async with api(settings, FakeDispatcher()) as client:
        names = [e["name"] for e in (await client.get("/environments")).json()["items"]]
        assert "down" not in names and "textcraft" in names
        refused = await client.post("/tasks", json={"environment": "down"})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "10"
        assert refused.json()["type"].endswith("environment-unavailable")
        assert "127.0.0.1" not in refused.text


async def test_a_task_on_a_registered_remote_textcraft_runs_end_to_end(
        database_url: str, textcraft_url: str) -> None:
    settings = Settings.model_validate({
        "ADAPT_DATABASE_URL": database_url,
        "remote_environments": {"textcraft": {"url": textcraft_url}},
        "remote_environment_allowed_networks": ["127.0.0.1/32"]})
    reference = MemorySink()
    want = await run_task(TextCraft(), {"seed": 5}, RunConfig(d_max=4), from_spec(SIM),
                          sink=reference)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://t") as client:
            created = await client.post("/tasks", json={"environment": "textcraft",
                                                         "environment_config": {"seed": 5},
                                                         "d_max": 4})
            assert created.status_code == 202, created.text
            task_id = created.json()["id"]
            events, _ = parse_sse((await client.get(f"/tasks/{task_id}/events")).text)
            assert events[-1].event == "task.finished"
            task = (await client.get(f"/tasks/{task_id}")).json()
            assert task["status"] == want.status == "succeeded"
            assert task["usage"]["llm_calls"] == len(reference.calls)
        assert await persisted_tree(app.state.sessions, task_id) == as_persisted(reference)
