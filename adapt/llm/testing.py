"""Test fakes that ship with the library: use them in your own tests too."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from inspect import isawaitable
from typing import Any

from adapt.llm.base import ChatRequest, ChatResponse, ToolCall, Usage

#: what a fake answers: text, or one tool call or several (a chat request with tools)
Answer = str | ToolCall | list[ToolCall]


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *,
              id: str | None = None) -> ToolCall:
    """A tool call a fake model answers with: ``tool_call("get", {"item": "stick",
    "count": 2})``. ``arguments`` as a str is sent as written (e.g. invalid JSON); the id
    defaults to ``call_<name>``, made unique per answer by the fake."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(id=id or "", name=name, arguments=text)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _response(name: str, request: ChatRequest, answer: Answer, number: int) -> ChatResponse:
    if isinstance(answer, str):
        text, calls = answer, None
    else:
        raw = [answer] if isinstance(answer, ToolCall) else list(answer)
        text = ""
        calls = [c.model_copy(update={"id": c.id or f"call_{number}_{i}"})
                 for i, c in enumerate(raw)]
    written = text + "".join(c.name + c.arguments for c in calls or ())
    usage = Usage(
        prompt_tokens=_estimate_tokens(request.as_prompt()),
        completion_tokens=_estimate_tokens(written),
        estimated=True,
    )
    return ChatResponse(text=text, usage=usage, model=name, simulated=True,
                        finish_reason="tool_calls" if calls else "stop", tool_calls=calls)


def _is_answer(value: object) -> bool:
    return isinstance(value, str | ToolCall) or (
        isinstance(value, list) and all(isinstance(c, ToolCall) for c in value))


class ScriptedModel:
    """Replies from a list, in order; records every request it got in ``requests``. A reply
    is text, or a :class:`ToolCall` (or a list of them: see :func:`tool_call`) answered as
    the model's tool calls.

    Raises ``AssertionError`` when asked for more replies than it was given, so a test notices
    an unexpected extra call.
    """

    simulated = True

    def __init__(self, replies: Iterable[Answer], name: str = "scripted") -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []
        self.name = name

    @property
    def remaining(self) -> int:
        return len(self.replies) - len(self.requests)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if len(self.requests) >= len(self.replies):
            raise AssertionError(
                f"ScriptedModel {self.name!r} ran out of replies after {len(self.replies)} calls; "
                f"last prompt ended with: {request.as_prompt()[-200:]!r}"
            )
        answer = self.replies[len(self.requests)]
        self.requests.append(request)
        return _response(self.name, request, answer, len(self.requests))

    @property
    def prompts(self) -> list[str]:
        return [r.as_prompt() for r in self.requests]


Reply = Callable[[ChatRequest], Answer | Awaitable[Answer]]


class FunctionModel:
    """Computes each reply with ``fn(request)`` (sync or async): text, or tool calls as
    :class:`ScriptedModel` takes them; records requests."""

    simulated = True

    def __init__(self, fn: Reply, name: str = "function") -> None:
        self.fn = fn
        self.requests: list[ChatRequest] = []
        self.name = name

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        out = self.fn(request)
        answer = await out if isawaitable(out) else out
        if not _is_answer(answer):
            raise TypeError(f"FunctionModel {self.name!r}: the reply function returned "
                            f"{type(answer).__name__}, not str or tool calls")
        return _response(self.name, request, answer, len(self.requests))

    @property
    def prompts(self) -> list[str]:
        return [r.as_prompt() for r in self.requests]
