"""Test fakes that ship with the library: use them in your own tests too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from inspect import isawaitable

from adapt.llm.base import ChatRequest, ChatResponse, Usage


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _response(name: str, request: ChatRequest, text: str) -> ChatResponse:
    usage = Usage(
        prompt_tokens=_estimate_tokens(request.as_prompt()),
        completion_tokens=_estimate_tokens(text),
        estimated=True,
    )
    return ChatResponse(text=text, usage=usage, model=name, simulated=True, finish_reason="stop")


class ScriptedModel:
    """Replies from a list, in order; records every request it got in ``requests``.

    Raises ``AssertionError`` when asked for more replies than it was given, so a test notices
    an unexpected extra call.
    """

    simulated = True

    def __init__(self, replies: Iterable[str], name: str = "scripted") -> None:
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
        text = self.replies[len(self.requests)]
        self.requests.append(request)
        return _response(self.name, request, text)

    @property
    def prompts(self) -> list[str]:
        return [r.as_prompt() for r in self.requests]


Reply = Callable[[ChatRequest], str | Awaitable[str]]


class FunctionModel:
    """Computes each reply with ``fn(request)`` (sync or async); records requests."""

    simulated = True

    def __init__(self, fn: Reply, name: str = "function") -> None:
        self.fn = fn
        self.requests: list[ChatRequest] = []
        self.name = name

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        out = self.fn(request)
        text = await out if isawaitable(out) else out
        if not isinstance(text, str):
            raise TypeError(f"FunctionModel {self.name!r}: the reply function returned "
                            f"{type(text).__name__}, not str")
        return _response(self.name, request, text)

    @property
    def prompts(self) -> list[str]:
        return [r.as_prompt() for r in self.requests]
