"""A fake OpenAI-compatible server for the model clients' tests: answers from a list of
responses over ``httpx.MockTransport`` and logs what it got; the reply bodies it answers with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

LOCAL_URL = "http://127.0.0.1:9/v1"  # loopback: allowed by the guard; never reached (mocked)


def chat_body(
    content: str | None = "hello",
    *,
    usage: tuple[int, int] | None = (11, 3),
    finish_reason: str = "stop",
    model: str = "test-model",
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A chat answer; ``tool_calls``: OpenAI's entries (``{"id", "type": "function",
    "function": {"name", "arguments"}}``), answered as the model's tool calls."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content,
                            **({"tool_calls": tool_calls} if tool_calls is not None else {})},
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


def error_response(
    status: int, message: str, *, retry_after_ms: str | None = "1"
) -> httpx.Response:
    headers = {"retry-after-ms": retry_after_ms} if retry_after_ms is not None else {}
    return httpx.Response(
        status, headers=headers, json={"error": {"message": message, "type": "test_error"}}
    )
