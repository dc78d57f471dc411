"""Engine events and the ``TreeSink`` protocol.

The engine emits, in the order things happen: ``node.created``, ``node.updated``, ``step``,
``llm_call`` and finally ``task.finished``. Each event carries a full snapshot of what changed,
enough to rebuild the tree. Persistence, streaming and progress displays are sinks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, Protocol, get_args

from pydantic import BaseModel, Field

from adapt.engine.tree import FinalStatus, LLMCall, Node, Step, TaskResult
from adapt.llm.base import ChatResponse

# The event types, defined once: the store's event log and the API use these names.
#: what the engine emits
EngineEventType = Literal["node.created", "node.updated", "step", "llm_call", "task.finished"]
#: what a task's event log holds: the engine's events, and ``task.resumed`` (the service's)
EventType = Literal[EngineEventType, "task.resumed"]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)


class NodeCreated(BaseModel):
    type: Literal["node.created"] = "node.created"
    node: Node


class NodeUpdated(BaseModel):
    type: Literal["node.updated"] = "node.updated"
    node: Node


class StepAppended(BaseModel):
    type: Literal["step"] = "step"
    step: Step


class LLMCallMade(BaseModel):
    """An LLM call. Besides the tree's record (``call``) it carries what replay needs: the
    request's fingerprint and the full response (not part of the event's JSON)."""

    type: Literal["llm_call"] = "llm_call"
    call: LLMCall
    request_fingerprint: str = Field(default="", exclude=True)
    response: ChatResponse | None = Field(default=None, exclude=True)


class TaskFinished(BaseModel):
    type: Literal["task.finished"] = "task.finished"
    result: TaskResult


class LLMCallFailed(BaseModel):
    """An LLM call the provider failed for good (after its retries): no answer, so no
    ``llm_call``. Not part of the event stream (nothing is stored for it, and a resumed run must
    replay the stream as it was): a sink that wants it (trace spans) has a ``call_failed``
    method, which :func:`call_failed` calls."""

    node_id: int | None
    role: str
    #: the model asked for
    model: str
    chat: bool = False
    #: ``{error class}: {message}``
    error: str
    latency_s: float = 0.0
    retries: int = 0


Event = Annotated[
    NodeCreated | NodeUpdated | StepAppended | LLMCallMade | TaskFinished,
    Field(discriminator="type"),
]


# -- the payload of each event in a task's event log (its ``data`` in the API) -----------------
class NodeData(BaseModel):
    """``node.created`` / ``node.updated``."""

    node: Node


class StepData(BaseModel):
    """``step``."""

    step: Step


class CallData(BaseModel):
    """``llm_call``: the call without its prompt and messages (stored once, with the call)."""

    call: LLMCall


class FinishedData(BaseModel):
    """``task.finished``: the engine's result, or none when the service ended the task from
    outside the engine (cancelled while queued, an interruption)."""

    status: FinalStatus
    result: TaskResult | None = None
    error: str | None = None


class ResumedData(BaseModel):
    """``task.resumed``: the task is queued again after the interruption ``after``."""

    status: Literal["queued"] = "queued"
    after: str | None = None


class TreeSink(Protocol):
    async def emit(self, event: Event) -> None: ...


async def flush(sink: TreeSink, *, soon: bool = False) -> None:
    """Ask a buffering sink to write what it holds (the engine calls this before every LLM call
    and at the end). Sinks without a ``flush`` method need nothing. ``soon`` (before an LLM
    call): the engine need not wait for the write, which may land while the model answers; a
    sink that can write in the background says so with a ``flush_soon`` method."""
    method = getattr(sink, "flush_soon", None) if soon else None
    if method is None:
        method = getattr(sink, "flush", None)
    if method is not None:
        await method()


async def call_failed(sink: TreeSink, failure: LLMCallFailed) -> None:
    """Tell ``sink`` (if it has a ``call_failed`` method) that a call failed for good."""
    method = getattr(sink, "call_failed", None)
    if method is not None:
        await method(failure)


class NullSink:
    async def emit(self, event: Event) -> None:
        return None


class FanoutSink:
    """Sends every event to several sinks, in order."""

    def __init__(self, sinks: Iterable[TreeSink]) -> None:
        self.sinks = list(sinks)

    async def emit(self, event: Event) -> None:
        for sink in self.sinks:
            await sink.emit(event)

    async def flush(self) -> None:
        for sink in self.sinks:
            await flush(sink)

    async def flush_soon(self) -> None:
        for sink in self.sinks:
            await flush(sink, soon=True)

    async def call_failed(self, failure: LLMCallFailed) -> None:
        for sink in self.sinks:
            await call_failed(sink, failure)


class MemorySink:
    """Collects every event and keeps the latest snapshot of each node."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.nodes: dict[int, Node] = {}
        self.steps: dict[int, list[Step]] = {}
        self.calls: list[LLMCall] = []
        self.result: TaskResult | None = None

    async def emit(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, NodeCreated | NodeUpdated):
            self.nodes[event.node.id] = event.node
        elif isinstance(event, StepAppended):
            self.steps.setdefault(event.step.node_id, []).append(event.step)
        elif isinstance(event, LLMCallMade):
            self.calls.append(event.call)
        else:
            self.result = event.result

    @property
    def root(self) -> Node | None:
        return next((n for n in self.nodes.values() if n.parent_id is None), None)

    def children(self, node_id: int) -> list[Node]:
        kids = [n for n in self.nodes.values() if n.parent_id == node_id]
        return sorted(kids, key=lambda n: n.position)

    def tree(self, *, with_steps: bool = True, with_calls: bool = False) -> dict[str, Any]:
        """The whole run as nested JSON: nodes with children, steps and (optionally) calls."""

        def build(node: Node) -> dict[str, Any]:
            out = node.model_dump(mode="json")
            if with_steps:
                out["steps"] = [s.model_dump(mode="json") for s in self.steps.get(node.id, [])]
            if with_calls:
                out["llm_calls"] = [
                    c.model_dump(mode="json") for c in self.calls if c.node_id == node.id
                ]
            out["children"] = [build(c) for c in self.children(node.id)]
            return out

        root = self.root
        return {
            "result": self.result.model_dump(mode="json") if self.result else None,
            "tree": build(root) if root else None,
        }
