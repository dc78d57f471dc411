"""The model protocol: what the engine needs from any LLM backend."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    role: Role
    content: str


class ChatRequest(BaseModel):
    """One LLM call. Either ``messages`` (chat) or ``prompt`` (completion) is set.

    Backends convert between the two: a chat backend sends a prompt as one user message, a
    completion backend joins messages into one prompt.
    """

    messages: list[Message] | None = None
    prompt: str | None = None
    stop: list[str] = Field(default_factory=list)
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int | None = None
    role: str = "executor"  # who asks: executor, planner, reflection, ... (metadata only)

    def as_prompt(self) -> str:
        if self.prompt is not None:
            return self.prompt
        return "\n\n".join(m.content for m in self.messages or [])

    def as_messages(self) -> list[Message]:
        if self.messages is not None:
            return list(self.messages)
        return [Message(role="user", content=self.prompt or "")]


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False  # True when counted from text length rather than reported

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChatResponse(BaseModel):
    text: str
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""
    simulated: bool = False
    finish_reason: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a ``ChatRequest``. ``name`` is what records and reports show."""

    name: str
    simulated: bool

    async def complete(self, request: ChatRequest) -> ChatResponse: ...
