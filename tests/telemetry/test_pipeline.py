"""The OTLP pipeline: never blocks the caller, bounded, and counts what it drops."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from adapt.telemetry.otlp import Pipeline
from adapt.telemetry.spans import SpanRecord


def records(n: int, error: str | None = None) -> list[SpanRecord]:
    return [SpanRecord(name=f"s{i}", trace_id=7, span_id=i + 1, parent_id=None if i == 0 else 1,
                       start_ns=1_000 + i, end_ns=2_000 + i, attributes={"i": i},
                       kind="client" if i else "internal", error=error) for i in range(n)]


class Stuck(SpanExporter):
    """An endpoint that does not answer until released."""

    def __init__(self, result: SpanExportResult = SpanExportResult.SUCCESS) -> None:
        self.release = threading.Event()
        self.result = result
        self.got: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(10)
        self.got.extend(spans)
        return self.result

    def shutdown(self) -> None:
        self.release.set()


def test_spans_keep_their_ids_parents_times_kind_and_status() -> None:
    memory = InMemorySpanExporter()
    pipeline = Pipeline(memory, schedule_delay_millis=10)
    pipeline.export(records(3, error="ProviderError: 503"))
    assert pipeline.flush(5)
    got = sorted(memory.get_finished_spans(), key=lambda s: s.context.span_id)
    assert [(s.context.trace_id, s.context.span_id, s.parent.span_id if s.parent else None)
            for s in got] == [(7, 1, None), (7, 2, 1), (7, 3, 1)]
    assert [(s.start_time, s.end_time) for s in got] == [(1000, 2000), (1001, 2001), (1002, 2002)]
    assert [s.kind for s in got] == [SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.CLIENT]
    assert got[0].status.status_code == StatusCode.ERROR
    assert got[0].resource.attributes["service.name"] == "adapt"
    assert pipeline.dropped == 0
    pipeline.shutdown()


def test_a_stuck_endpoint_neither_blocks_nor_grows_the_queue_and_drops_are_counted() -> None:
    stuck = Stuck()
    pipeline = Pipeline(stuck, max_queue_size=4, max_export_batch_size=4,
                        schedule_delay_millis=10)
    started = time.monotonic()
    pipeline.export(records(10))
    assert time.monotonic() - started < 0.5, "handing spans over waited on the endpoint"
    assert pipeline.dropped == 6 and pipeline.take_dropped() == 6 and pipeline.take_dropped() == 0
    stuck.release.set()
    assert pipeline.flush(5)
    assert len(stuck.got) == 4
    pipeline.export(records(2))  # room again once the endpoint answered
    assert pipeline.flush(5) and len(stuck.got) == 6 and pipeline.dropped == 6
    pipeline.shutdown()


def test_spans_the_endpoint_refused_are_counted_as_dropped() -> None:
    failing = Stuck(SpanExportResult.FAILURE)
    failing.release.set()
    pipeline = Pipeline(failing, schedule_delay_millis=10)
    pipeline.export(records(3))
    pipeline.flush(5)
    assert pipeline.dropped == 3 and pipeline.take_dropped() == 3
    pipeline.shutdown()
