"""``OtelSink``: a running task's spans, exported as the tree grows.

It sits after the ``DbSink`` in the task's fan-out and hands spans over only once the events
that ended them are in the database (at the engine's flushes, and at every answered LLM call and
the task's end, which the ``DbSink`` writes at once). So a span is exported by the attempt whose
events ended it: a resumed attempt replays the first ``skip`` events to rebuild its state (with
the times the event log recorded, so open spans keep their real start) and exports nothing for
them; the spans of nodes still open at a crash end, and are exported, in the attempt that
finishes them. Span ids are deterministic (:mod:`adapt.telemetry.spans`), so the resumed
attempt's spans hang under the spans the earlier attempt exported.

Telemetry never breaks a task: any error in here is logged once and export stops for the task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from adapt.engine.events import Event, LLMCallFailed, LLMCallMade, TaskFinished, TreeSink
from adapt.telemetry.spans import SpanRecord, TraceBuilder

log = logging.getLogger(__name__)

Export = Callable[[Sequence[SpanRecord]], None]
#: the database write under way in the background, if any (``DbSink.writing``)
Writing = Callable[[], "asyncio.Future[None] | None"]


@dataclass
class Replay:
    """What a resumed attempt needs from the event log: when each replayed engine event was
    recorded (ordinal -> ns since the epoch), and where the service ended the task from
    outside the engine (after that many engine events, at that time)."""

    times: dict[int, int] = field(default_factory=dict)
    aborts: list[tuple[int, int]] = field(default_factory=list)


class OtelSink(TreeSink):
    def __init__(self, builder: TraceBuilder, export: Export, *, skip: int = 0,
                 replay: Replay | None = None, clock: Callable[[], int] = time.time_ns,
                 writing: Writing | None = None) -> None:
        self.builder = builder
        self.writing = writing
        self.export = export
        self.skip = skip
        self.replay = replay or Replay()
        self.clock = clock
        self.ordinal = 0
        self.pending: list[SpanRecord] = []
        self.broken = False
        # an abort recorded before any engine event (the task failed at once, then resumed)
        self._aborts_at(0)

    async def emit(self, event: Event) -> None:
        if self.broken:
            return
        try:
            self.ordinal += 1
            if self.ordinal <= self.skip:
                at = self.replay.times.get(self.ordinal) or self.clock()
                self.builder.feed(event, at)  # exported by the attempt that recorded it
                self._aborts_at(self.ordinal)
                return
            self.pending.extend(self.builder.feed(event, self.clock()))
            if isinstance(event, LLMCallMade | TaskFinished):  # the DbSink wrote it at once
                self._release()
        except Exception:
            self._break()

    async def call_failed(self, failure: LLMCallFailed) -> None:
        """A call the provider failed for good: its span goes with the events that follow
        (the nodes it ended, or the service's end of the task)."""
        if self.broken or self.ordinal < self.skip:
            return
        try:
            self.pending.extend(self.builder.failed_call(failure, self.clock()))
        except Exception:
            self._break()

    async def flush(self) -> None:
        """Called after the ``DbSink``'s flush (the fan-out's order): what it wrote may go."""
        if not self.broken:
            try:
                self._release()
            except Exception:
                self._break()

    async def flush_soon(self) -> None:
        """The engine's flush before an LLM call, after the ``DbSink``'s: that sink writes in
        the background, so the spans go when its write has landed (and not at all if it
        fails: the attempt that stores those events sends them)."""
        if self.broken:
            return
        write = self.writing() if self.writing is not None else None
        if write is None or (write.done() and not write.cancelled()
                             and write.exception() is None):
            await self.flush()
            return
        spans, self.pending = self.pending, []
        if not spans:
            return

        def landed(done: asyncio.Future[None]) -> None:
            if done.cancelled() or done.exception() is not None or self.broken:
                return
            try:
                self.export(spans)
            except Exception:
                self._break()

        write.add_done_callback(landed)

    def abort(self, error: str) -> None:
        """The service ends the task with ``error`` (outside the engine's events): every open
        span ends now."""
        if self.broken:
            return
        try:
            self.pending.extend(self.builder.abort(self.clock(), error))
            self._release()
        except Exception:
            self._break()

    def _aborts_at(self, ordinal: int) -> None:
        for after, at in self.replay.aborts:
            if after == ordinal:  # an earlier attempt's service exported these spans
                self.builder.abort(at, "aborted")

    def _release(self) -> None:
        if self.pending:
            spans, self.pending = self.pending, []
            self.export(spans)

    def _break(self) -> None:
        self.broken = True
        self.pending = []
        log.warning("task %s: trace export stopped after an error", self.builder.task.task_id,
                    exc_info=True)
