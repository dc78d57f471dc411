"""The real-model guard: loopback always allowed, anything else refused before any traffic."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import httpx
import pytest

from adapt.errors import RealModelRefused
from adapt.llm import ChatRequest, OpenAIChatModel, OpenAICompletionModel, load_model
from adapt.llm.guard import (
    check_endpoint,
    forbid_remote,
    is_loopback,
    refusal_reason,
    remote_forbidden,
)


def _no_network(request: httpx.Request) -> httpx.Response:
    pytest.fail(f"the guard let a request through to {request.url}")


def no_network_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(_no_network))


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.1.2.3/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://LOCALHOST:11434/v1", True),
        ("http://api.localhost/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://[::ffff:127.0.0.1]:8080/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://0.0.0.0:8000/v1", False),
        ("http://localhost.example.com/v1", False),
        ("http://127.0.0.1.nip.io/v1", False),
        ("http://[::2]/v1", False),
        ("not a url", False),
        ("", False),
    ],
)
def test_is_loopback(url: str, local: bool) -> None:
    assert is_loopback(url) is local


def test_refusal_reason_is_pure_policy() -> None:
    remote = "https://api.openai.com/v1"
    local = "http://127.0.0.1:8000/v1"
    assert refusal_reason(local, allow_remote=False, forbidden=True) is None
    assert refusal_reason(remote, allow_remote=True, forbidden=False) is None
    refused = refusal_reason(remote, allow_remote=False, forbidden=False, model="gpt-4o")
    assert refused is not None
    assert "ADAPT_ALLOW_REMOTE_LLM=1" in refused and "allow_remote=True" in refused
    assert "gpt-4o" in refused and remote in refused
    forbidden = refusal_reason(remote, allow_remote=True, forbidden=True)
    assert forbidden is not None and "forbid_remote" in forbidden


def test_the_test_process_forbids_remote() -> None:
    assert remote_forbidden()
    forbid_remote()  # idempotent
    assert remote_forbidden()
    check_endpoint("http://127.0.0.1:1/v1")
    with pytest.raises(RealModelRefused):
        check_endpoint("https://api.openai.com/v1", allow_remote=True)


@pytest.mark.parametrize("cls", [OpenAIChatModel, OpenAICompletionModel])
@pytest.mark.parametrize("allow_remote", [False, True])
def test_remote_refused_before_any_traffic(cls: Any, allow_remote: bool) -> None:
    with pytest.raises(RealModelRefused) as info:
        cls(
            "gpt-4o-mini",
            base_url="https://api.openai.com/v1",
            api_key="sk-test",
            allow_remote=allow_remote,
            http_client=no_network_client(),
        )
    # forbid_remote() (called by conftest) wins over allow_remote=True.
    assert "forbid_remote" in str(info.value)


def test_default_endpoint_is_remote() -> None:
    with pytest.raises(RealModelRefused, match=r"api\.openai\.com"):
        OpenAIChatModel("gpt-4o-mini", api_key="sk-test", http_client=no_network_client())


def test_openai_base_url_env_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://example.com/v1")
    with pytest.raises(RealModelRefused, match=r"example\.com"):
        OpenAIChatModel("m", api_key="k")


@pytest.mark.parametrize(
    "spec",
    ["openai:gpt-4o-mini", "openai-completions:gpt-3.5-turbo-instruct", "openai:x@https://a.b/v1"],
)
def test_load_model_refuses_remote(spec: str) -> None:
    with pytest.raises(RealModelRefused):
        load_model(spec, api_key="sk-test", allow_remote=True)


async def test_loopback_allowed(ok_chat: Any, fake_server: Any) -> None:
    fake_server.responses = [ok_chat("local ok")]
    model = load_model("openai:llama3@http://localhost:11434/v1")
    model_direct = OpenAIChatModel(
        "llama3", base_url="http://localhost:11434/v1", http_client=fake_server.client()
    )
    assert model.name == "llama3"
    assert (await model_direct.complete(ChatRequest(prompt="hi"))).text == "local ok"


_FRESH_PROCESS = textwrap.dedent(
    """
    import asyncio, json, httpx
    from adapt.errors import RealModelRefused
    from adapt.llm import ChatRequest, OpenAIChatModel
    from adapt.llm.guard import forbid_remote

    hits = []
    def handle(request) -> None:
        hits.append(str(request.url))
        return httpx.Response(200, json={
            "id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "remote ok"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def model(allow) -> None:
        return OpenAIChatModel("gpt-4o-mini", api_key="sk-test", allow_remote=allow,
                               http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle)))

    async def main() -> None:
        out = {}
        try:
            model(False)
            out["default"] = "allowed"
        except RealModelRefused:
            out["default"] = "refused"
        allowed = model(True)
        out["allowed"] = (await allowed.complete(ChatRequest(prompt="hi"))).text
        forbid_remote()
        try:
            await allowed.complete(ChatRequest(prompt="hi"))
            out["after_forbid"] = "allowed"
        except RealModelRefused:
            out["after_forbid"] = "refused"
        out["hits"] = hits
        print(json.dumps(out))

    asyncio.run(main())
    """
)


def test_allow_remote_in_a_fresh_process_and_forbid_at_call_time() -> None:
    """Only a process without forbid_remote() can allow remote; the mock transport stands in."""
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["default"] == "refused"
    assert out["allowed"] == "remote ok"
    assert out["after_forbid"] == "refused"  # checked again on every call
    assert out["hits"] == ["https://api.openai.com/v1/chat/completions"]
