"""The sink contract (``TreeSink``) and its conformance kit (``adapt.engine.sinktesting``): the
engine's own sinks pass it, and a sink that breaks the contract fails the check it breaks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from adapt.engine.events import (
    Event,
    FanoutSink,
    LLMCallFailed,
    LLMCallMade,
    MemorySink,
    NodeUpdated,
    NullSink,
    StepAppended,
    TreeSink,
    as_sink,
)
from adapt.engine.sinktesting import CHECKS, SinkCase, SinkConformanceError, check_sink
from adapt.engine.tree import LLMCall


def memory_case(sink: MemorySink) -> SinkCase:
    async def stored() -> list[str]:
        return [e.type for e in sink.events]

    return SinkCase(sink, stored=stored)


def factory(make: Callable[[], SinkCase]) -> Callable[[], AbstractAsyncContextManager[SinkCase]]:
    @asynccontextmanager
    async def case() -> AsyncIterator[SinkCase]:
        yield make()

    return case


async def test_the_memory_sink_conforms() -> None:
    report = await check_sink(factory(lambda: memory_case(MemorySink())), name="MemorySink")
    assert report.passed == list(CHECKS) and report.skipped == []


async def test_the_null_sink_conforms_with_nothing_to_read_back() -> None:
    report = await check_sink(factory(lambda: SinkCase(NullSink())))
    assert report.skipped == ["every_flush"]


async def test_a_fanout_conforms_and_so_does_an_emit_only_object_it_adapts() -> None:
    class Counter:  # emit only: the defaults do the rest
        def __init__(self) -> None:
            self.seen = 0

        async def emit(self, event: Event) -> None:
            self.seen += 1

    def make() -> SinkCase:
        memory = MemorySink()
        case = memory_case(memory)
        case.sink = FanoutSink([Counter(), memory])
        return case

    assert (await check_sink(factory(make))).passed == list(CHECKS)


def test_an_object_with_its_own_flush_must_subclass_tree_sink() -> None:
    class Buffered:
        async def emit(self, event: Event) -> None: ...

        async def flush(self) -> None: ...

    with pytest.raises(TypeError, match="Buffered has flush but is not a TreeSink"):
        as_sink(Buffered())
    with pytest.raises(TypeError, match="no emit"):
        as_sink(object())  # type: ignore[arg-type]


# -- sinks that break the contract, each in one way ---------------------------------------------
class Duck:
    """Not a TreeSink."""

    async def emit(self, event: Event) -> None: ...


class SyncFlush(MemorySink):
    def flush(self) -> None:  # type: ignore[override]
        return None


class BackgroundOnly(MemorySink):
    """Starts its writes in flush_soon and has no flush that waits for them."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.held.append(event)

    async def flush_soon(self) -> None:
        held, self.held = self.held, []
        asyncio.get_running_loop().create_task(self._write(held))

    async def _write(self, held: list[Event]) -> None:
        await asyncio.sleep(0.01)
        for event in held:
            await MemorySink.emit(self, event)


class LateFlush(BackgroundOnly):
    """Has a flush, but it neither waits for the background write nor writes what is held."""

    async def flush(self) -> None:
        await self.flush_soon()


class Mutating(MemorySink):
    async def emit(self, event: Event) -> None:
        if isinstance(event, NodeUpdated):
            event.node.status = "succeeded"  # "fixes" the engine's snapshot
        await super().emit(event)


class Reordering(MemorySink):
    """Stores steps ahead of the events before them."""

    async def emit(self, event: Event) -> None:
        await super().emit(event)
        if isinstance(event, StepAppended) and len(self.events) > 1:
            self.events.insert(0, self.events.pop())


class Dropping(MemorySink):
    """Loses the last event if nothing follows it (writes one event late)."""

    def __init__(self) -> None:
        super().__init__()
        self.last: Event | None = None

    async def emit(self, event: Event) -> None:
        if self.last is not None:
            await super().emit(self.last)
        self.last = event


class RecordsFailures(MemorySink):
    """Stores a failed call as a call with no answer (a resumed run would replay it)."""

    async def call_failed(self, failure: LLMCallFailed) -> None:
        await self.emit(LLMCallMade(call=LLMCall(
            id=0, node_id=failure.node_id, role=failure.role, model=failure.model,
            completion="")))


class FailsOnFailure(MemorySink):
    async def call_failed(self, failure: LLMCallFailed) -> None:
        raise RuntimeError("cannot handle a failed call")


BROKEN: list[tuple[Callable[[], Any], str, str]] = [
    (Duck, "base_class", "does not subclass TreeSink"),
    (SyncFlush, "base_class", "SyncFlush.flush is not an async method"),
    (BackgroundOnly, "base_class", "no flush to wait for them"),
    (LateFlush, "empty", "still run"),
    (Mutating, "events_unchanged", "changed"),
    (Reordering, "flush_lands", "expected"),
    (Dropping, "flush_lands", "expected"),
    (RecordsFailures, "flush_lands", "expected"),
    (FailsOnFailure, "stream", "RuntimeError: cannot handle a failed call"),
]


@pytest.mark.parametrize(("make", "check", "message"), BROKEN,
                         ids=[b[0].__name__ for b in BROKEN])
async def test_a_sink_that_breaks_the_contract_fails_the_check_it_breaks(
        make: Callable[[], Any], check: str, message: str) -> None:
    def case() -> SinkCase:
        sink = make()
        if isinstance(sink, MemorySink):
            return memory_case(sink)
        return SinkCase(sink)

    name = make.__name__
    with pytest.raises(SinkConformanceError, match=message) as failed:
        await check_sink(factory(case), name=name)
    assert failed.value.check == check
    assert str(failed.value).startswith(f"sink check {check!r} failed for {name}: ")


async def test_a_late_flush_without_a_read_back_still_fails_on_its_running_write() -> None:
    with pytest.raises(SinkConformanceError) as failed:
        await check_sink(factory(lambda: SinkCase(LateFlush())))
    assert failed.value.check == "empty" and "still run" in failed.value.detail


def test_the_base_class_cannot_be_used_without_emit() -> None:
    class NoEmit(TreeSink):
        pass

    with pytest.raises(TypeError, match="abstract"):
        NoEmit()  # type: ignore[abstract]
