"""The span model: a task's engine events in, span records out (no OpenTelemetry import).

One trace per task. Its spans mirror the decomposition tree::

    invoke_workflow {strategy}                    the task
      invoke_agent {executor kind}                the root node (its executor run, plan, children)
        text_completion {model} / chat {model}    an executor LLM call
        execute_tool {environment}                an environment action (a text executor's)
        execute_tool {tool}                       a tool call (the tools executor's)
        plan {executor kind}                      the planner's decomposition
          text_completion {model}                 the planner's LLM call
        invoke_agent {executor kind}              a child node, and so on down
        and group / or group                      a nested AND/OR group of the plan

Ids are derived from the task id and what the span stands for (the node id, the call id, the
step index), so every attempt of a task, and ``adapt export otlp`` later, give a span the same
trace and span id. A span is emitted once, by the event that ends it; :class:`TraceBuilder`
never emits the same span twice. Times are the events' (live: now; replayed or exported: the
time the event log recorded).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from adapt.engine.events import (
    Event,
    LLMCallFailed,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    StepAppended,
    TaskFinished,
)
from adapt.engine.tree import FINAL_NODE_STATUSES, Node
from adapt.telemetry import semconv
from adapt.telemetry.semconv import Attributes, TaskInfo

FINAL_NODE = FINAL_NODE_STATUSES


@dataclass
class SpanRecord:
    """One finished span, ready for any exporter."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Attributes
    kind: Literal["internal", "client"] = "internal"
    #: set: the span's status is ERROR with this description
    error: str | None = None


def _digest(text: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big")
    return value or 1  # an all-zero id is invalid in OpenTelemetry


def trace_id(task_id: str) -> int:
    return _digest(f"adapt-trace:{task_id}", 16)


def span_id(task_id: str, key: str) -> int:
    return _digest(f"adapt-span:{task_id}:{key}", 8)


@dataclass
class _Open:
    """A span that started and has not ended yet."""

    key: str
    name: str
    parent: int | None
    start_ns: int
    attributes: Attributes = field(default_factory=dict)


class TraceBuilder:
    """Feeds on one task's events (in the engine's order) and returns the spans each ends."""

    def __init__(self, task: TaskInfo, *, content: bool = False) -> None:
        self.task = task
        self.content = content
        self.trace_id = trace_id(task.task_id)
        self.root = span_id(task.task_id, "task")
        self.started_ns: int | None = None
        self.nodes: dict[int, Node] = {}
        self.node_start: dict[int, int] = {}
        #: the last time something happened in a node (an action's span starts there)
        self.node_seen: dict[int, int] = {}
        #: node id -> the open plan span (planner calls seen, the plan not yet on the node)
        self.plans: dict[int, _Open] = {}
        #: ids of the spans emitted (by this builder, or marked as sent by an earlier attempt)
        self.emitted: set[int] = set()
        #: the highest call id seen (a call that fails for good would have had the next one)
        self.last_call = 0
        self.finished = False

    # -- ids ---------------------------------------------------------------------------------
    def node_span(self, node_id: int | None) -> int:
        return self.root if node_id is None else span_id(self.task.task_id, f"node:{node_id}")

    def _parent_of(self, node: Node) -> int:
        return self.node_span(node.parent_id) if node.parent_id is not None else self.root

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, event: Event, at_ns: int) -> list[SpanRecord]:
        if self.started_ns is None:
            self.started_ns = at_ns
        out: list[SpanRecord] = []
        if isinstance(event, NodeCreated | NodeUpdated):
            self._node(event.node, at_ns, out)
        elif isinstance(event, StepAppended):
            step = event.step
            start = self.node_seen.get(step.node_id, at_ns)
            self.node_seen[step.node_id] = at_ns
            called = semconv.called_tool(step)
            if step.kind == "action" or called is not None:
                out.extend(self._emit(SpanRecord(
                    name=f"execute_tool {called['name'] if called else self.task.environment}",
                    trace_id=self.trace_id,
                    span_id=span_id(self.task.task_id, f"step:{step.node_id}:{step.index}"),
                    parent_id=self.node_span(step.node_id), start_ns=min(start, at_ns),
                    end_ns=at_ns, attributes={
                        **semconv.tool(step, self.task, content=self.content),
                        **_error_type(step.error)}, error=step.error)))
        elif isinstance(event, LLMCallMade):
            self._call(event, at_ns, out)
        elif isinstance(event, TaskFinished):
            result = event.result
            error = result.error if result.status == "error" else None
            out.extend(self._close_all(at_ns, error))
            out.extend(self._emit(SpanRecord(
                name=f"invoke_workflow {self.task.strategy}", trace_id=self.trace_id,
                span_id=self.root, parent_id=None, start_ns=self.started_ns, end_ns=at_ns,
                attributes={**semconv.workflow(self.task), **semconv.workflow_result(result),
                            **_error_type(error)}, error=error)))
            self.finished = True
        return out

    def abort(self, at_ns: int, error: str) -> list[SpanRecord]:
        """The service ended the task from outside the engine (``error``): every open span ends
        now, with that error."""
        if self.started_ns is None:
            self.started_ns = at_ns
        out = self._close_all(at_ns, error)
        out.extend(self._emit(SpanRecord(
            name=f"invoke_workflow {self.task.strategy}", trace_id=self.trace_id,
            span_id=self.root, parent_id=None, start_ns=self.started_ns, end_ns=at_ns,
            attributes={**semconv.workflow(self.task), "adapt.task.status": "error",
                        **_error_type(error)}, error=error)))
        return out

    def open_spans(self) -> list[int]:
        """Ids of the spans started and not ended (emitted ones excluded)."""
        ids = [self.node_span(n) for n in self.node_start
               if self.nodes[n].status not in FINAL_NODE]
        ids += [span_id(self.task.task_id, p.key) for p in self.plans.values()]
        if self.started_ns is not None and not self.finished:
            ids.append(self.root)
        return [i for i in ids if i not in self.emitted]

    def mark_sent(self, ids: list[int]) -> None:
        """Spans an earlier attempt already emitted (ended when the service stopped it)."""
        self.emitted.update(ids)

    # -- internals --------------------------------------------------------------------------
    def _emit(self, span: SpanRecord) -> list[SpanRecord]:
        if span.span_id in self.emitted:
            return []
        self.emitted.add(span.span_id)
        return [span]

    def _node(self, node: Node, at_ns: int, out: list[SpanRecord]) -> None:
        self.nodes[node.id] = node
        self.node_seen[node.id] = at_ns
        if node.id not in self.node_start and node.status != "pending":
            self.node_start[node.id] = at_ns
        plan = self.plans.get(node.id)
        if plan is not None and node.plan is not None:
            del self.plans[node.id]
            out.extend(self._plan_span(node, plan, at_ns))
        if node.status in FINAL_NODE:
            out.extend(self._node_span(node, at_ns))

    def _node_span(self, node: Node, at_ns: int, error: str | None = None) -> list[SpanRecord]:
        start = self.node_start.setdefault(node.id, at_ns)
        error = error or node.error
        return self._emit(SpanRecord(
            name=semconv.node_name(node, self.task), trace_id=self.trace_id,
            span_id=self.node_span(node.id), parent_id=self._parent_of(node),
            start_ns=start, end_ns=max(start, at_ns),
            attributes={**semconv.node(node, self.task), **_error_type(error)}, error=error))

    def _plan_span(self, node: Node, plan: _Open, at_ns: int,
                   error: str | None = None) -> list[SpanRecord]:
        return self._emit(SpanRecord(
            name=f"plan {self.task.executor_kind}", trace_id=self.trace_id,
            span_id=span_id(self.task.task_id, plan.key), parent_id=plan.parent,
            start_ns=plan.start_ns, end_ns=max(plan.start_ns, at_ns),
            attributes={**semconv.plan(node, self.task), **_error_type(error)}, error=error))

    def _call_parent(self, node_id: int | None, role: str, key: str, start: int) -> int:
        """A call's parent: its node's span, or for a planner call the node's plan span
        (opened by the plan's first call)."""
        parent = self.node_span(node_id)
        if role == "planner" and node_id is not None:
            plan = self.plans.get(node_id)
            if plan is None:
                plan = self.plans[node_id] = _Open(key=f"plan:{node_id}:{key}", name="plan",
                                                   parent=parent, start_ns=start)
            parent = span_id(self.task.task_id, plan.key)
        return parent

    def _call(self, event: LLMCallMade, at_ns: int, out: list[SpanRecord]) -> None:
        call = event.call
        self.last_call = max(self.last_call, call.id)
        start = at_ns - max(0, int(call.latency_s * 1e9))
        parent = self._call_parent(call.node_id, call.role, str(call.id), start)
        if call.node_id is not None:
            self.node_seen[call.node_id] = at_ns
        out.extend(self._emit(SpanRecord(
            name=f"{semconv.operation(call)} {semconv.request_model(call)}",
            trace_id=self.trace_id,
            span_id=span_id(self.task.task_id, f"call:{call.id}"), parent_id=parent,
            start_ns=start, end_ns=at_ns, kind="client",
            attributes=semconv.llm(call, event.response, self.task, content=self.content))))

    def failed_call(self, failure: LLMCallFailed, at_ns: int) -> list[SpanRecord]:
        """The client span of a call the provider failed for good: ERROR, with ``error.type``.
        Such a call is not in the event stream, so no later attempt replays it: each failure
        is its own span, with an id of its own (a resumed attempt that makes the call again
        sends that call's span beside it). It hangs under the node's open plan span if there
        is one, else under the node's span (it opens no plan: the call that opens it is the
        one a resumed attempt makes)."""
        if self.started_ns is None:
            self.started_ns = at_ns
        start = at_ns - max(0, int(failure.latency_s * 1e9))
        plan = self.plans.get(failure.node_id) if failure.node_id is not None else None
        parent = (span_id(self.task.task_id, plan.key)
                  if plan is not None and failure.role == "planner"
                  else self.node_span(failure.node_id))
        if failure.node_id is not None:
            self.node_seen[failure.node_id] = at_ns
        error_type = _error_type(failure.error).get("error.type", "_OTHER")
        key = f"call:{self.last_call + 1}:failed:{secrets.token_hex(8)}"
        return self._emit(SpanRecord(
            name=f"{semconv.failed_operation(failure)} {failure.model}", trace_id=self.trace_id,
            span_id=span_id(self.task.task_id, key), parent_id=parent,
            start_ns=start, end_ns=at_ns, kind="client",
            attributes=semconv.llm_failed(failure, self.task, error_type), error=failure.error))

    def _close_all(self, at_ns: int, error: str | None) -> list[SpanRecord]:
        """End every open plan and node span (deepest first)."""
        out: list[SpanRecord] = []
        for node_id, plan in list(self.plans.items()):
            del self.plans[node_id]
            out.extend(self._plan_span(self.nodes.get(node_id) or _stub(node_id), plan, at_ns,
                                       error))
        running = [self.nodes[n] for n in self.node_start
                   if self.nodes[n].status not in FINAL_NODE]
        for node in sorted(running, key=lambda n: -n.depth):
            out.extend(self._node_span(node, at_ns, error))
        return out


def _stub(node_id: int) -> Node:
    return Node(id=node_id, goal="")


def _error_type(error: str | None) -> dict[str, Any]:
    """``error.type``: the error's class where the message names one (``ProviderError: ...``),
    else ``_OTHER``."""
    if not error:
        return {}
    head = error.split(":", 1)[0].strip()
    kind = head if head.isidentifier() else "_OTHER"
    if error.startswith("budget exceeded"):
        kind = "budget_exceeded"
    return {"error.type": kind}
