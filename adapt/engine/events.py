"""Engine events and the sinks that receive them (``TreeSink``, its contract and defaults).

The engine emits, in the order things happen: ``node.created``, ``node.updated``, ``step``,
``llm_call`` and finally ``task.finished``. Each event carries a full snapshot of what changed,
enough to rebuild the tree. Persistence, streaming and progress displays are sinks; the
conformance kit :mod:`adapt.engine.sinktesting` checks a sink against the contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Protocol, get_args

from pydantic import BaseModel, Field

from adapt.engine.tree import FinalStatus, LLMCall, Node, Step, TaskResult
from adapt.llm.base import ChatResponse

# The event types, defined once: the store's event log and the API use these names.
#: what the engine emits
EngineEventType = Literal["node.created", "node.updated", "step", "llm_call", "task.finished"]
#: what a task's event log holds: the engine's events, and the service's: ``task.resumed``,
#: ``approval.requested`` and ``approval.decided`` (a person in the loop)
EventType = Literal[EngineEventType, "task.resumed", "approval.requested", "approval.decided"]
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
    replay the stream as it was): a sink that wants it (trace spans) overrides
    ``TreeSink.call_failed``."""

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


class ApprovalRequestedData(BaseModel):
    """``approval.requested``: the task waits for a decision on ``proposal`` at a node."""

    approval_id: str
    node_id: int
    kind: str
    proposal: dict[str, Any]


class ApprovalDecidedData(BaseModel):
    """``approval.decided``: a person decided (``decided_by``: the API key's id, or null
    while the API runs open)."""

    approval_id: str
    node_id: int
    kind: str
    decision: str
    reason: str | None = None
    decided_by: str | None = None


class TreeSink(ABC):
    """The base of every sink: what the engine calls, and the default of each method.

    The contract (``adapt.engine.sinktesting`` checks it):

    - :meth:`emit` receives every event once, in the engine's order. The event is the
      engine's snapshot: a sink may keep it but never changes it.
    - :meth:`flush`: the engine calls it at the end of a task (after ``task.finished``). When it
      returns, everything emitted before has landed (written, exported, shown), including
      what an earlier :meth:`flush_soon` started, and nothing the sink started is still running.
      It may be called again, and with nothing emitted.
    - :meth:`flush_soon`: the engine calls it before every LLM call. The sink may start its
      write and return before it lands (the write overlaps the model's answer); the next
      :meth:`flush` or :meth:`flush_soon` waits for it, so writes land in order. A write's
      failure is raised at one of them, before the next call starts. Default: :meth:`flush`.
    - :meth:`call_failed`: an LLM call the provider failed for good. Not an event: nothing of
      it enters the event stream (a resumed run must replay the stream as it was). Default:
      nothing.

    The engine does not cancel a task through its sinks: what the outside says to a running
    attempt (cancel, lease lost) comes through ``run_task(cancel=...)``.
    """

    @abstractmethod
    async def emit(self, event: Event) -> None:
        """Receive ``event`` (the next in the stream)."""

    async def flush(self) -> None:
        """Land everything emitted so far, and wait for it."""
        return None

    async def flush_soon(self) -> None:
        """Start landing everything emitted so far; the next flush waits for it."""
        await self.flush()

    async def call_failed(self, failure: LLMCallFailed) -> None:
        """An LLM call failed for good (not part of the event stream)."""
        return None


class EventReceiver(Protocol):
    """Anything with an async ``emit``: the engine takes it as a :class:`TreeSink` whose
    other methods do nothing (:func:`as_sink`)."""

    async def emit(self, event: Event) -> None: ...


class _EmitOnly(TreeSink):
    def __init__(self, receiver: EventReceiver) -> None:
        self.receiver = receiver

    async def emit(self, event: Event) -> None:
        await self.receiver.emit(event)


def as_sink(receiver: TreeSink | EventReceiver) -> TreeSink:
    """``receiver`` as a :class:`TreeSink`: itself when it is one; an object with only an
    ``emit`` gets the defaults for the rest. An object that has a ``flush``, ``flush_soon``
    or ``call_failed`` of its own must subclass ``TreeSink`` (refused here, so the method is
    never silently left uncalled)."""
    if isinstance(receiver, TreeSink):
        return receiver
    own = [m for m in ("flush", "flush_soon", "call_failed") if hasattr(receiver, m)]
    if own:
        raise TypeError(f"{type(receiver).__name__} has {', '.join(own)} but is not a "
                        "TreeSink: subclass adapt.TreeSink so the engine calls them")
    if not callable(getattr(receiver, "emit", None)):
        raise TypeError(f"{type(receiver).__name__} is not a sink: it has no emit()")
    return _EmitOnly(receiver)


async def flush(sink: TreeSink, *, soon: bool = False) -> None:
    """``sink.flush()``, or ``sink.flush_soon()`` when ``soon`` (the engine's flush before an
    LLM call)."""
    await (sink.flush_soon() if soon else sink.flush())


async def call_failed(sink: TreeSink, failure: LLMCallFailed) -> None:
    """``sink.call_failed(failure)``."""
    await sink.call_failed(failure)


class NullSink(TreeSink):
    async def emit(self, event: Event) -> None:
        return None


class FanoutSink(TreeSink):
    """Sends every event to several sinks, in order."""

    def __init__(self, sinks: Iterable[TreeSink | EventReceiver]) -> None:
        self.sinks = [as_sink(s) for s in sinks]

    async def emit(self, event: Event) -> None:
        for sink in self.sinks:
            await sink.emit(event)

    async def flush(self) -> None:
        for sink in self.sinks:
            await sink.flush()

    async def flush_soon(self) -> None:
        for sink in self.sinks:
            await sink.flush_soon()

    async def call_failed(self, failure: LLMCallFailed) -> None:
        for sink in self.sinks:
            await sink.call_failed(failure)


class MemorySink(TreeSink):
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
