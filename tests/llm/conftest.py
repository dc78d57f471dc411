"""Fixtures for the LLM tests. Also switches the real-model guard to "never" for the process.

The integrator should move the ``forbid_remote()`` call to the top-level ``tests/conftest.py``
so that every test directory is covered, not only this one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from adapt.llm import guard

guard.forbid_remote()

LOCAL_URL = "http://127.0.0.1:9/v1"  # loopback: allowed by the guard; never reached (mocked)

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(autouse=True)
def _clean_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)


def chat_body(
    content: str | None = "hello",
    *,
    usage: tuple[int, int] | None = (11, 3),
    finish_reason: str = "stop",
    model: str = "test-model",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return body


def completion_body(
    text: str = "hello",
    *,
    usage: tuple[int, int] | None = (11, 3),
    finish_reason: str = "stop",
    model: str = "test-model",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "text": text, "finish_reason": finish_reason, "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return body


@dataclass
class FakeServer:
    """Answers requests from a list of responses (the last one repeats); logs what it got."""

    responses: list[httpx.Response | Exception] = field(default_factory=list)
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        index = min(len(self.requests), len(self.responses)) - 1
        answer = self.responses[index]
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))


@pytest.fixture
def fake_server() -> FakeServer:
    return FakeServer()


def error_response(
    status: int, message: str, *, retry_after_ms: str | None = "1"
) -> httpx.Response:
    headers = {"retry-after-ms": retry_after_ms} if retry_after_ms is not None else {}
    return httpx.Response(
        status, headers=headers, json={"error": {"message": message, "type": "test_error"}}
    )


@pytest.fixture
def ok_chat() -> Callable[..., httpx.Response]:
    return lambda *a, **kw: httpx.Response(200, json=chat_body(*a, **kw))


@pytest.fixture
def ok_completion() -> Callable[..., httpx.Response]:
    return lambda *a, **kw: httpx.Response(200, json=completion_body(*a, **kw))


@pytest.fixture
def error() -> Callable[..., httpx.Response]:
    return error_response


@pytest.fixture
def local_url() -> str:
    return LOCAL_URL
