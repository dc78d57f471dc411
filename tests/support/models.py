"""Every model the settings build, recorded: the requests each got, in order."""

from __future__ import annotations

import pytest

from adapt.llm.base import ChatModel, ChatRequest, ChatResponse


class Recorder:
    """Wraps a (simulated) model and keeps every request it got."""

    def __init__(self, model: ChatModel, seen: list[ChatRequest]) -> None:
        self.model, self.seen = model, seen
        self.name, self.simulated = model.name, model.simulated

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.seen.append(request)
        return await self.model.complete(request)


def record_models(monkeypatch: pytest.MonkeyPatch) -> list[ChatRequest]:
    """Every model the settings build (``ModelFactory.build``) keeps its requests here."""
    from adapt.service.model_factory import ModelFactory

    seen: list[ChatRequest] = []
    build = ModelFactory.build
    monkeypatch.setattr(ModelFactory, "build",
                        lambda self, spec, *a, **k: Recorder(build(self, spec, *a, **k), seen))
    return seen


def as_turn(prompt: str, action: str) -> str:
    """``action`` as the prompt asks for it: the bare line, or, when the prompt ends with
    InterCode's ``Thought N:`` (profile paper's numbered turns), a thought and ``Action N:``."""
    import re

    numbered = re.search(r"Thought (\d+):$", prompt)
    if numbered is None:
        return action
    return f" I do the next step.\nAction {numbered.group(1)}: {action}"
