"""The server of ``adapt env serve`` (adapt/envserve): the protocol's rules, checked over HTTP
with TextCraft: each change number applied once, sessions that expire, problem details, the
token, bounded bodies; and the OpenAPI document in the repository is the server's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from adapt.envs.textcraft import TextCraft
from adapt.envserve import create_app, openapi_document

ROOT = Path(__file__).resolve().parents[3]
OPENAPI = ROOT / "docs" / "remote-environments.openapi.json"


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(TextCraft, idle_seconds=60, max_sessions=3)) as client:
        yield client


def _session(client: TestClient, config: dict[str, object] | None = None) -> str:
    created = client.post("/v1/sessions", json={"config": config or {"seed": 3}})
    assert created.status_code == 201, created.text
    return str(created.json()["session"])


def test_the_committed_openapi_document_is_the_servers() -> None:
    text = json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
    assert OPENAPI.read_text() == text, (
        "docs/remote-environments.openapi.json is stale: run "
        "`adapt env openapi --output docs/remote-environments.openapi.json`")
    paths = json.loads(text)["paths"]
    assert set(paths) == {
        "/v1/health", "/v1/environment", "/v1/sessions", "/v1/sessions/{session_id}",
        "/v1/sessions/{session_id}/steps", "/v1/sessions/{session_id}/checkpoints",
        "/v1/sessions/{session_id}/rollbacks", "/v1/sessions/{session_id}/task-observation",
        "/v1/sessions/{session_id}/verify", "/v1/sessions/{session_id}/tool-action"}


def test_metadata_and_a_session_say_what_the_engine_asks_of_an_environment(
        client: TestClient) -> None:
    meta = client.get("/v1/environment").json()
    assert meta["name"] == "textcraft" and meta["protocol"] == 1 and meta["verifies"]
    assert meta["config_schema"] == TextCraft.config_model.model_json_schema()
    assert meta["state_fields"] == ["current inventory"] and meta["success_reward"] == 1.0
    assert meta["paper_profile"]["run"] == {"d_max": 4}
    created = client.post("/v1/sessions", json={"config": {"seed": 3, "prompts": "paper"}})
    body = created.json()
    local = TextCraft()
    assert body["observation"] == local.reset(seed=3, prompts="paper")
    assert body["goal"] == local.goal and body["state"] == local.salient_state()
    assert body["prompts"]["executor"] == local.prompt_template("executor")
    assert set(body["prompts"]) >= {"executor", "planner", "plan_and_execute", "reflection",
                                    "stateact", "executor_spec"}


def test_a_change_number_is_applied_once_and_a_repeat_gets_the_stored_answer(
        client: TestClient) -> None:
    sid = _session(client)
    first = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 1, "action": "get 1 oak logs"})
    again = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 1, "action": "get 1 oak logs"})
    assert first.status_code == again.status_code == 200
    assert first.json()["repeated"] is False and again.json()["repeated"] is True
    assert {**again.json(), "repeated": False} == first.json()
    inventory = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 2, "action": "inventory"})
    assert inventory.json()["observation"] == "Inventory: [oak logs] (1) "  # one log, not two
    gap = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 5, "action": "inventory"})
    assert gap.status_code == 409
    assert gap.json()["type"] == "urn:adapt:env-problem:sequence-conflict"
    counters = client.get("/v1/health").json()
    assert (counters["applied"], counters["repeated"]) == (2, 1)


def test_failures_state_and_verdicts_come_with_the_answers(client: TestClient) -> None:
    sid = _session(client, {"goal": "craft stick"})
    bad = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 1, "action": "dance"}).json()
    assert bad["failed"] is True and bad["observation"].startswith("Could not")
    got = client.post(f"/v1/sessions/{sid}/steps",
                      json={"seq": 2, "action": "get 2 bamboo"}).json()
    assert got["failed"] is False and got["state"] == "Inventory: [bamboo] (2) "
    local = TextCraft()
    local.reset(goal="craft stick")
    start = local.verification_mark()
    local.step("dance")
    local.step("get 2 bamboo")
    for goal in ("get 2 bamboo", "craft stick", "get 1 bamboo"):
        for since, mark in ((None, None), (0, start)):
            answer = client.post(f"/v1/sessions/{sid}/verify",
                                 json={"goal": goal, "since": since}).json()
            want = local.verify(goal, since=mark)
            assert (answer["verdict"], answer["evidence"]) == (want.verdict, want.evidence)
    task = client.post(f"/v1/sessions/{sid}/task-observation", json={"goal": "get 2 bamboo"})
    assert task.json()["observation"].endswith("\n\nGoal: get 2 bamboo.")


def test_errors_are_problem_details_naming_what_is_wrong(client: TestClient) -> None:
    invalid = client.post("/v1/sessions", json={"config": {"seed": "three"}})
    assert invalid.status_code == 422
    assert invalid.headers["content-type"].startswith("application/problem+json")
    assert invalid.json()["type"] == "urn:adapt:env-problem:invalid-config"
    assert "seed" in invalid.json()["detail"]
    unknown = client.post("/v1/sessions/nope/steps", json={"seq": 1, "action": "inventory"})
    assert unknown.status_code == 404
    assert unknown.json()["type"] == "urn:adapt:env-problem:session-not-found"
    missing = client.post(f"/v1/sessions/{_session(client)}/steps", json={"seq": 0})
    assert missing.status_code == 422 and {e["field"] for e in missing.json()["errors"]} == {
        "seq", "action"}
    too_long = client.post("/v1/sessions", content=b"{" + b" " * 2_000_000 + b"}",
                           headers={"content-type": "application/json"})
    assert too_long.status_code == 413
    for _ in range(2):  # 3 sessions at most (one exists)
        _session(client)
    full = client.post("/v1/sessions", json={"config": {"seed": 1}})
    assert full.status_code == 503 and full.json()["type"].endswith("too-many-sessions")


def test_an_idle_session_is_closed_and_forgotten() -> None:
    with TestClient(create_app(TextCraft, idle_seconds=0.2)) as client:
        sid = _session(client)
        time.sleep(0.5)
        gone = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 1, "action": "inventory"})
        assert gone.status_code == 404
        assert client.get("/v1/health").json()["expired"] == 1


def test_with_a_token_every_route_but_health_needs_it() -> None:
    with TestClient(create_app(TextCraft, token="s3cret")) as client:
        assert client.get("/v1/health").status_code == 200
        refused = client.get("/v1/environment")
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert client.get("/v1/environment",
                          headers={"authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/v1/environment",
                          headers={"authorization": "Bearer s3cret"}).status_code == 200


def test_an_environment_that_raises_is_a_500_without_its_trace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = TestClient(create_app(TextCraft), raise_server_exceptions=False)
    sid = _session(client)

    def broken(self: TextCraft, action: str) -> None:
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setattr(TextCraft, "step", broken)
    failed = client.post(f"/v1/sessions/{sid}/steps", json={"seq": 1, "action": "inventory"})
    assert failed.status_code == 500 and "secret" not in failed.text
    assert client.get("/v1/health").json()["applied"] == 0  # nothing was applied
