"""The model protocol: what the engine needs from any LLM backend."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One call of a tool that a model asked for (an entry of OpenAI's ``tool_calls``)."""

    #: the call's id, which the ``tool`` message answering it names
    id: str
    name: str
    #: the arguments as the model wrote them: JSON text, kept unparsed (a model may write
    #: invalid JSON, which the executor then reports back to it)
    arguments: str = "{}"


class Message(BaseModel):
    role: Role
    content: str
    #: an assistant message's tool calls (chat with tools)
    tool_calls: list[ToolCall] | None = None
    #: a ``tool`` message: the id of the call it answers
    tool_call_id: str | None = None

    def wire(self) -> dict[str, Any]:
        """The message as stored and shown: ``role`` and ``content``, plus the tool fields
        it has (a plain message is ``{"role", "content"}`` as it always was)."""
        return self.model_dump(exclude_none=True)


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
    #: a scoring call (``ScoringModel.score``): the text whose log-probabilities after
    #: ``prompt`` are asked for; ``None`` for a completion
    continuation: str | None = None
    #: a GBNF grammar the output must follow (constrained decoding; ``adapt.llm.gbnf``):
    #: ``local:`` models and OpenAI-compatible endpoints whose ``server_kind`` takes grammars
    #: apply it; other backends ignore it (the decoding monitor still corrects the output)
    grammar: str | None = None
    #: tools the model may call (chat): OpenAI ``tools`` entries, ``{"type": "function",
    #: "function": {"name", "description", "parameters"}}`` (``adapt.envs.tools.ToolSpec``)
    tools: list[dict[str, Any]] | None = None
    #: whether the model must call a tool: ``auto`` (it may answer with text), ``required``,
    #: ``none``; ``None``: the server's default
    tool_choice: Literal["auto", "required", "none"] | None = None
    #: a JSON schema the answer must follow (structured output): endpoints whose server kind
    #: takes one get it in that server's field (``adapt.llm.openai_compat.endpoint``), the
    #: simulator honours it; others ignore it, and the caller parses the text as it comes
    json_schema: dict[str, Any] | None = None

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
    #: prompt tokens the provider served from its cache (included in ``prompt_tokens``)
    cached_tokens: int = 0
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
    #: a scoring call's answer: the continuation's token log-probabilities (``None``: none)
    logprobs: list[float] | None = None
    retries: int = 0  # transient provider errors retried before this answer
    #: the tools the model called (a chat request with ``tools``); ``None``: none
    tool_calls: list[ToolCall] | None = None


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers a ``ChatRequest``. ``name`` is what records and reports show."""

    name: str
    simulated: bool

    async def complete(self, request: ChatRequest) -> ChatResponse: ...


@runtime_checkable
class ScoringModel(Protocol):
    """A model that can score text: the token log-probabilities of ``continuation`` after
    ``prompt`` (``None`` when it cannot tell). PASS's ``logprob`` rule needs one."""

    async def score(self, prompt: str, continuation: str) -> list[float] | None: ...


@runtime_checkable
class FollowsReplay(Protocol):
    """A model with state across calls (a ``script:`` model's place in its script): told of
    each recorded answer a resumed task replays in its stead, so it continues from there."""

    def replayed(self, request: ChatRequest, response: ChatResponse) -> None: ...


def can_score(model: object) -> bool:
    return isinstance(model, ScoringModel)


class WrapperModel:
    """Base of model wrappers (recording, replay, ...): forwards everything to ``wrapped``.

    Subclasses override what they change. Optional capabilities of the wrapped model stay
    visible, and only those: an attribute the wrapper does not define is looked up on the
    wrapped model, so ``can_score(wrapper)`` is ``can_score(wrapped)``. A subclass that changes
    scoring defines ``wrap_score``; it is offered as ``score`` when the wrapped model scores.
    """

    def __init__(self, wrapped: ChatModel) -> None:
        self.wrapped = wrapped
        self.name: str = wrapped.name
        self.simulated: bool = wrapped.simulated

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self.wrapped.complete(request)

    def can_score(self) -> bool:
        """Whether this wrapper answers ``score`` (default: when the wrapped model does)."""
        return can_score(self.wrapped)

    def __getattr__(self, item: str) -> Any:
        if item == "wrapped":  # not set yet (e.g. during unpickling): no recursion
            raise AttributeError(item)
        if item == "score":
            if not self.can_score():
                raise AttributeError(item)
            own = getattr(type(self), "wrap_score", None)
            if own is not None:
                return own.__get__(self, type(self))
        return getattr(self.wrapped, item)


def scoring_request(prompt: str, continuation: str) -> ChatRequest:
    """The request a scoring call is recorded and replayed as (role ``scorer``)."""
    return ChatRequest(prompt=prompt, continuation=continuation, max_tokens=0,
                       role="scorer")
