"""The sink conformance kit: run ``check_sink`` in your sink's tests.

    from contextlib import asynccontextmanager
    from adapt.engine.sinktesting import SinkCase, check_sink

    @asynccontextmanager
    async def my_sink():
        sink = MySink(...)
        yield SinkCase(sink, stored=lambda: sink.read_back())   # a fresh sink per check

    async def test_conforms() -> None:
        report = await check_sink(my_sink)
        assert report.skipped == []

Each check gets a fresh case from the factory and plays the engine's part against it: the events
of a small task (``sample_stream``), a flush before every LLM call (``flush_soon``), a failed
call (``call_failed``) and a flush at the end, as ``run_task`` does. A failed check raises
``SinkConformanceError`` (an ``AssertionError``) whose message starts with
``sink check '<name>' failed``; an exception the sink raises inside a check becomes such a
failure, chained to the original. The checks, in order, are ``CHECKS``; the contract they check
is ``TreeSink``'s (``adapt.engine.events``).

What a sink keeps is its own business, so a case may say how to read it back: ``stored()``
(what the sink has landed so far) and ``expect(events)`` (what it should be after those
events; default: their types, in order). The checks that compare them are skipped without
``stored``; ``pending()`` (what the sink holds that has not landed) must be 0 after a flush.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
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
    TreeSink,
)
from adapt.engine.tree import LLMCall, Node, Plan, Step, TaskResult, Termination, UsageTotals
from adapt.llm.base import ChatResponse, Usage

#: every check, in the order they run
CHECKS: tuple[str, ...] = (
    "base_class",
    "empty",
    "stream",
    "events_unchanged",
    "flush_lands",
    "flush_again",
    "every_flush",
    "call_failed",
)

#: one thing the engine does to a sink: emit an event, report a failed call, or flush
Op = Event | LLMCallFailed | Literal["flush", "flush_soon"]


def _default_expect(events: Sequence[Event]) -> Any:
    return [e.type for e in events]


@dataclass
class SinkCase:
    """A sink under test and, optionally, how to read back what it landed."""

    sink: TreeSink
    #: what the sink has landed so far (rows written, spans exported, ...), comparable with
    #: what ``expect`` says; None: the checks that need it are skipped
    stored: Callable[[], Awaitable[Any]] | None = None
    #: what ``stored`` should say once these events (all emitted so far) landed
    expect: Callable[[Sequence[Event]], Any] = _default_expect
    #: how much the sink holds that has not landed yet (0 after a flush)
    pending: Callable[[], int] | None = None


#: builds a fresh case for one check, and cleans up after it
CaseFactory = Callable[[], AbstractAsyncContextManager[SinkCase]]


class SinkConformanceError(AssertionError):
    """A failed sink check; ``check`` names it."""

    def __init__(self, check: str, sink: str, detail: str) -> None:
        self.check = check
        self.sink = sink
        self.detail = detail
        super().__init__(f"sink check {check!r} failed for {sink}: {detail}")


@dataclass
class SinkReport:
    """What ``check_sink`` checked: ``passed`` held; ``skipped`` needed ``stored``."""

    sink: str
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _call(i: int, node_id: int, role: str, prompt: str, completion: str) -> LLMCallMade:
    usage = Usage(prompt_tokens=len(prompt) // 4 + 1, completion_tokens=len(completion) // 4 + 1)
    response = ChatResponse(text=completion, usage=usage, model="kit-model", simulated=True)
    return LLMCallMade(
        call=LLMCall(id=i, node_id=node_id, role=role, model="kit-model",
                     request_model="kit-model", simulated=True, prompt=prompt, stop=["\n"],
                     completion=completion, prompt_tokens=usage.prompt_tokens,
                     completion_tokens=usage.completion_tokens, cost_usd=0.0),
        request_fingerprint=f"{i:064x}", response=response)


def sample_stream() -> list[Op]:
    """What the engine does to its sink in a small task: the root fails, is planned into two
    steps, the first succeeds, the second's model call fails for good and the task ends with
    an error. Every event is a fresh snapshot, as the engine emits them."""
    root = Node(id=1, goal="make a thing")
    plan = Plan(raw="Step 1: get a part\nStep 2: put it together\n"
                    "Execution Order: (Step 1 AND Step 2)",
                steps=["get a part", "put it together"],
                expression_text="(Step 1 AND Step 2)")
    first = Node(id=2, parent_id=1, position=0, depth=2, goal="get a part")
    second = Node(id=3, parent_id=1, position=1, depth=2, goal="put it together")

    def node(base: Node, **fields: Any) -> Node:
        return base.model_copy(update=fields)

    usage = UsageTotals(llm_calls=1, prompt_tokens=6, completion_tokens=8)
    ops: list[Op] = [
        NodeCreated(node=root),
        NodeUpdated(node=node(root, status="running")),
        "flush_soon",
        _call(1, 1, "executor", "Goal: make a thing.\n> ", "think: Too hard. Task failed!"),
        StepAppended(step=Step(kind="thought", node_id=1, index=1, raw="think: Too hard.",
                               text="think: Too hard. Task failed!", observation="OK.")),
        NodeUpdated(node=node(root, status="running", steps_count=1, usage=usage,
                              executor_success=False, self_assessed=False, claim=False,
                              termination=Termination.FAILED)),
        "flush_soon",
        _call(2, 1, "planner", "Plan: make a thing.\n", plan.raw),
        NodeUpdated(node=node(root, status="running", steps_count=1, plan=plan, logic="and",
                              termination=Termination.FAILED)),
        NodeCreated(node=first),
        NodeCreated(node=second),
        NodeUpdated(node=node(first, status="running")),
        "flush_soon",
        _call(3, 2, "executor", "Goal: get a part.\n> ", "get part"),
        StepAppended(step=Step(kind="action", node_id=2, index=1, raw="get part",
                               text="get part", observation="Got a part.", reward=0.0)),
        NodeUpdated(node=node(first, status="succeeded", success=True, steps_count=1,
                              termination=Termination.COMPLETED, context_out="Holds: a part")),
        NodeUpdated(node=node(second, status="running", context_in="Holds: a part")),
        "flush_soon",
        LLMCallFailed(node_id=3, role="executor", model="kit-model",
                      error="ProviderUnavailable: the provider did not answer", latency_s=0.5,
                      retries=2),
        NodeUpdated(node=node(second, status="failed", success=False,
                              error="ProviderUnavailable: the provider did not answer")),
        NodeUpdated(node=node(root, status="failed", success=False, steps_count=1, plan=plan,
                              logic="and", error="ProviderUnavailable: the provider did not "
                                                 "answer")),
        TaskFinished(result=TaskResult(
            status="error", success=False, claimed_success=False, goal="make a thing",
            strategy="adapt", d_max=2, nodes=3, max_depth=2,
            usage=UsageTotals(llm_calls=3, prompt_tokens=20, completion_tokens=30),
            error="ProviderUnavailable: the provider did not answer")),
        "flush",
    ]
    return ops


def _events(ops: Sequence[Op]) -> list[Event]:
    return [op for op in ops if not isinstance(op, str | LLMCallFailed)]


async def _apply(sink: TreeSink, op: Op) -> None:
    if op == "flush":
        await sink.flush()
    elif op == "flush_soon":
        await sink.flush_soon()
    elif isinstance(op, LLMCallFailed):
        await sink.call_failed(op)
    elif not isinstance(op, str):
        await sink.emit(op)


class _Checker:
    def __init__(self, factory: CaseFactory, ops: Sequence[Op], name: str | None) -> None:
        self.factory = factory
        self.ops = list(ops)
        self.name: str = name or str(getattr(factory, "__name__", "sink"))
        self.report = SinkReport(self.name)

    def fail(self, check: str, detail: str) -> SinkConformanceError:
        return SinkConformanceError(check, self.name, detail)

    def passed(self, check: str) -> None:
        self.report.passed.append(check)

    def skipped(self, check: str) -> None:
        self.report.skipped.append(check)

    async def guarded(self, check: str, action: Awaitable[Any]) -> Any:
        """``await action``; an exception from the sink fails ``check``."""
        try:
            return await action
        except SinkConformanceError:
            raise
        except Exception as exc:
            raise self.fail(check, f"raised {type(exc).__name__}: {exc}") from exc

    async def compare(self, check: str, case: SinkCase, events: Sequence[Event],
                      when: str) -> None:
        if case.stored is None:
            return
        got = await self.guarded(check, case.stored())
        want = case.expect(list(events))
        if got != want:
            raise self.fail(check, f"{when}, the sink holds {got!r}; expected {want!r}")

    def settled(self, check: str, case: SinkCase, before: set[asyncio.Task[Any]]) -> None:
        """Nothing the sink started is still running, and nothing is left to land."""
        running = [t for t in asyncio.all_tasks() - before
                   if not t.done() and t is not asyncio.current_task()]
        if running:
            raise self.fail(check, f"flush() returned while the sink's {len(running)} "
                                   f"task(s) still run ({running[0].get_name()}): a flush "
                                   "waits for what it and earlier flushes started")
        left = case.pending() if case.pending is not None else 0
        if left:
            raise self.fail(check, f"flush() returned with {left} item(s) not landed")

    # -- the checks ----------------------------------------------------------------------
    async def base_class(self) -> None:
        async with self.factory() as case:
            sink = case.sink
            if not isinstance(sink, TreeSink):
                raise self.fail("base_class", f"{type(sink).__name__} does not subclass "
                                              "TreeSink (adapt.engine.events)")
            kind = type(sink)
            for method in ("emit", "flush", "flush_soon", "call_failed"):
                if not inspect.iscoroutinefunction(getattr(kind, method)):
                    raise self.fail("base_class", f"{kind.__name__}.{method} is not an "
                                                  "async method: the engine awaits it")
            if (kind.flush_soon is not TreeSink.flush_soon
                    and kind.flush is TreeSink.flush):
                raise self.fail("base_class", f"{kind.__name__} starts writes in flush_soon "
                                              "but has no flush to wait for them")
        self.passed("base_class")

    async def empty(self) -> None:
        async with self.factory() as case:
            before = asyncio.all_tasks()
            for op in ("flush", "flush_soon", "flush"):
                await self.guarded("empty", _apply(case.sink, op))
            self.settled("empty", case, before)
            await self.compare("empty", case, [], "with nothing emitted")
        self.passed("empty")

    async def stream(self) -> None:
        """The engine's stream with its flushes: accepted whole, events left as they were,
        everything landed at the end, and a second flush changes nothing."""
        async with self.factory() as case:
            before = asyncio.all_tasks()
            events = _events(self.ops)
            dumps = [e.model_dump(mode="json") for e in events]
            for op in self.ops:
                await self.guarded("stream", _apply(case.sink, op))
            self.passed("stream")
            changed = [e.type for e, d in zip(events, dumps, strict=True)
                       if e.model_dump(mode="json") != d]
            if changed:
                raise self.fail("events_unchanged", f"the sink changed {len(changed)} "
                                                    f"event(s) ({changed[0]} first): events "
                                                    "are the engine's snapshots")
            self.passed("events_unchanged")
            self.settled("flush_lands", case, before)
            await self.compare("flush_lands", case, events, "after the last flush")
            self.passed("flush_lands")
            held = await self.guarded("flush_again", case.stored()) if case.stored else None
            await self.guarded("flush_again", case.sink.flush())
            self.settled("flush_again", case, before)
            if case.stored is not None and await self.guarded(
                    "flush_again", case.stored()) != held:
                raise self.fail("flush_again", "a second flush changed what the sink holds")
            self.passed("flush_again")

    async def every_flush(self) -> None:
        """Flushed after every event: each flush lands exactly the events so far, in order."""
        async with self.factory() as case:
            if case.stored is None:
                self.skipped("every_flush")
                return
            before = asyncio.all_tasks()
            emitted: list[Event] = []
            for op in self.ops:
                if isinstance(op, str):
                    continue
                await self.guarded("every_flush", _apply(case.sink, op))
                if not isinstance(op, LLMCallFailed):
                    emitted.append(op)
                await self.guarded("every_flush", case.sink.flush())
                self.settled("every_flush", case, before)
                await self.compare("every_flush", case, emitted,
                                   f"after a flush following {len(emitted)} event(s)")
        self.passed("every_flush")

    async def call_failed(self) -> None:
        """A failed call is no event: it is accepted and adds nothing to what the sink holds."""
        async with self.factory() as case:
            failure = next(op for op in sample_stream() if isinstance(op, LLMCallFailed))
            await self.guarded("call_failed", case.sink.call_failed(failure))
            await self.guarded("call_failed", case.sink.flush())
            await self.compare("call_failed", case, [], "after a failed call and a flush")
        self.passed("call_failed")


async def check_sink(factory: CaseFactory, *, ops: Sequence[Op] | None = None,
                     name: str | None = None) -> SinkReport:
    """Run every check (``CHECKS``) against fresh cases from ``factory``; raises
    ``SinkConformanceError`` at the first that fails. ``ops``: the engine's part
    (default: ``sample_stream()``)."""
    checker = _Checker(factory, sample_stream() if ops is None else ops, name)
    await checker.base_class()
    await checker.empty()
    await checker.stream()
    await checker.every_flush()
    await checker.call_failed()
    return checker.report


__all__ = ["CHECKS", "CaseFactory", "Op", "SinkCase", "SinkConformanceError", "SinkReport",
           "check_sink", "sample_stream"]
