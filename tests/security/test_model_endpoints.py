"""Issue 14, item 1: a user names only endpoints the operator listed, a key goes only to its own
endpoint, and an upstream error body never reaches a user-visible field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapt.service.model_factory import NO_KEY
from tests.security.capture import capture_server
from tests.security.service import run_to_end, service

OPERATOR_KEY = "sk-operator-secret-key"
BODY = {"environment": "textcraft", "environment_config": {"seed": 3}, "strategy": "react",
        "d_max": 1, "budget": {"max_llm_calls": 2}}


def _task(model: str) -> dict[str, Any]:
    return {**BODY, "executor": {"model": model}}


@pytest.mark.parametrize("where", ["capture", "http://127.0.0.1:6379/v1",
                                   "http://10.1.2.3:8000/v1", "http://localhost:11434/v1"])
async def test_an_endpoint_outside_the_allow_list_is_a_422_naming_the_allowed_ones(
    database_url: str, where: str
) -> None:
    with capture_server() as listed, capture_server() as unlisted:
        url = unlisted.base_url if where == "capture" else where
        async with service(database_url, openai_api_key=OPERATOR_KEY,
                           llm_endpoints=[{"base_url": listed.base_url, "name": "vllm"}]) as c:
            response = await c.post("/tasks", json=_task(f"openai:x@{url}"))
            assert response.status_code == 422, response.text
            problem = response.json()
            assert problem["errors"][0]["field"] == "executor.model"
            assert f"vllm ({listed.base_url})" in problem["detail"]
            assert "openai (https://api.openai.com/v1)" in problem["detail"]
            assert OPERATOR_KEY not in response.text
            assert (await c.get("/tasks")).json()["items"] == []
        assert unlisted.requests == [] and listed.requests == []


async def test_each_key_is_sent_only_to_the_endpoint_it_was_configured_for(
    database_url: str,
) -> None:
    with capture_server() as a, capture_server() as b:
        endpoints = [{"base_url": a.base_url, "api_key": "key-for-a", "name": "a"},
                     {"base_url": b.base_url + "/", "name": "b"}]
        async with service(database_url, openai_api_key=OPERATOR_KEY,
                           llm_endpoints=endpoints) as client:
            on_b = await run_to_end(client, _task(f"openai:m@{b.base_url}"))
            on_a = await run_to_end(client, _task(f"openai:m@{a.base_url}"))
        assert on_a["usage"]["llm_calls"] >= 1 and on_b["usage"]["llm_calls"] >= 1
        assert b.requests and set(b.authorizations) == {f"Bearer {NO_KEY}"}
        assert a.requests and set(a.authorizations) == {"Bearer key-for-a"}


async def test_an_upstream_error_body_goes_to_the_log_not_to_the_task(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "UPSTREAM-SECRET-BODY redis_version:7.2"
    with capture_server(status=401, body=json.dumps({"error": {"message": secret}})) as up:
        async with service(database_url,
                           llm_endpoints=[{"base_url": up.base_url, "name": "lab"}]) as client:
            task = await run_to_end(client, _task(f"openai:m@{up.base_url}"))
            seen = [json.dumps(task)]
            for path in ("/tree", "/events?since=0", "/nodes/1"):
                seen.append((await client.get(f"/tasks/{task['id']}{path}")).text)
    assert task["status"] == "error"
    assert "endpoint lab" in task["error"] and "HTTP 401" in task["error"]
    assert all(secret not in text for text in seen)
    assert secret in caplog.text  # the operator can still read it


async def test_every_model_of_a_cascade_passes_the_allow_list(database_url: str) -> None:
    """``executor.models``: a listed endpoint first does not let an unlisted one through."""
    with capture_server() as listed, capture_server() as unlisted:
        async with service(database_url, openai_api_key=OPERATOR_KEY,
                           llm_endpoints=[{"base_url": listed.base_url, "name": "vllm"}]) as c:
            body = {**BODY, "executor": {"models": [f"openai:x@{listed.base_url}",
                                                     f"openai:y@{unlisted.base_url}"]}}
            response = await c.post("/tasks", json=body)
            assert response.status_code == 422, response.text
            problem = response.json()
            assert problem["errors"][0]["field"] == "executor.models.1"
            assert f"vllm ({listed.base_url})" in problem["detail"]
            assert OPERATOR_KEY not in response.text
            assert (await c.get("/tasks")).json()["items"] == []
        assert unlisted.requests == [] and listed.requests == []


async def test_each_model_of_a_cascade_gets_only_its_own_endpoints_key(
    database_url: str,
) -> None:
    with capture_server() as a, capture_server() as b:
        endpoints = [{"base_url": a.base_url, "api_key": "key-for-a", "name": "a"},
                     {"base_url": b.base_url, "api_key": "key-for-b", "name": "b"}]
        # one step per attempt: the capture servers only think, so each attempt fails
        body = {**BODY, "budget": {"max_llm_calls": 4},
                "executor": {"models": [f"openai:m@{a.base_url}", f"openai:m@{b.base_url}"],
                             "max_steps": 1}}
        async with service(database_url, llm_endpoints=endpoints) as client:
            task = await run_to_end(client, body)
            tree = (await client.get(f"/tasks/{task['id']}/tree")).json()["tree"]
        # attempt N ran executor.models[N - 1] (the label shows the model's name)
        assert [n["label"] for n in tree["children"]] == ["attempt 1: m", "attempt 2: m"]
        assert task["run_config"]["executor"]["models"] == [f"openai:m@{a.base_url}",
                                                            f"openai:m@{b.base_url}"]
        assert a.requests and set(a.authorizations) == {"Bearer key-for-a"}
        assert b.requests and set(b.authorizations) == {"Bearer key-for-b"}
