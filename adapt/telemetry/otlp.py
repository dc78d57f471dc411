"""The OTLP pipeline: span records -> OpenTelemetry SDK spans -> a bounded batch processor -> the
OTLP/HTTP exporter (configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables).

Export never slows or breaks a task: handing spans over only appends to a bounded queue (a
background thread exports in batches); when the queue is full the span is dropped and counted,
and so are spans whose export failed. One pipeline per process (:func:`pipeline`).

Imported only when export is configured (or by ``adapt export otlp``): the rest of adapt never
imports OpenTelemetry's SDK.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from adapt.telemetry import configured
from adapt.telemetry.semconv import SEMCONV_VERSION
from adapt.telemetry.spans import SpanRecord

log = logging.getLogger(__name__)

SCOPE = InstrumentationScope("adapt", None, f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}")


class CountingExporter(SpanExporter):
    """Wraps an exporter; counts the spans it exported and the ones it failed to."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # an exporter must not raise; count it as a failure
            log.warning("span export failed: %s", type(exc).__name__)
            result = SpanExportResult.FAILURE
        with self._lock:
            if result == SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Pipeline:
    """Span records in, OTLP out. ``dropped``: spans lost (queue full or export failed)."""

    def __init__(self, exporter: SpanExporter, *, resource: Resource | None = None,
                 max_queue_size: int = 2048, max_export_batch_size: int = 512,
                 schedule_delay_millis: float = 1000) -> None:
        self.exporter = CountingExporter(exporter)
        self.max_queue_size = max_queue_size
        self.processor = BatchSpanProcessor(
            self.exporter, max_queue_size=max_queue_size,
            max_export_batch_size=min(max_export_batch_size, max_queue_size),
            schedule_delay_millis=schedule_delay_millis)
        self.resource = resource or default_resource()
        self.accepted = 0
        self.queue_full = 0
        self._lock = threading.Lock()
        self._reported = 0

    @property
    def dropped(self) -> int:
        return self.queue_full + self.exporter.failed

    def export(self, spans: Sequence[SpanRecord]) -> None:
        """Queue ``spans`` for export (never blocks: past the queue's bound they are dropped)."""
        for record in spans:
            with self._lock:
                done = self.exporter.exported + self.exporter.failed
                if self.accepted - done >= self.max_queue_size:
                    self.queue_full += 1
                    continue
                self.accepted += 1
            self.processor.on_end(to_readable(record, self.resource))

    def send(self, spans: Sequence[SpanRecord], *, timeout_s: float = 60.0) -> None:
        """Queue ``spans`` for export, waiting while the queue is full (it is flushed, in this
        thread): for ``adapt export otlp``, where nothing else waits on the caller, so a long
        history reaches a slow backend whole, at the backend's pace. Only spans the endpoint
        refused (or a pipeline already shut down) count as dropped."""
        for record in spans:
            if self._wait_for_room(timeout_s):
                self.processor.on_end(to_readable(record, self.resource))

    def _wait_for_room(self, timeout_s: float) -> bool:
        """Take a place in the queue, flushing it while it is full (False: the pipeline is shut
        down; the span is counted as dropped)."""
        while True:
            with self._lock:
                done = self.exporter.exported + self.exporter.failed
                if self.accepted - done < self.max_queue_size:
                    self.accepted += 1
                    return True
            if not self.processor.force_flush(int(timeout_s * 1000)):
                with self._lock:
                    self.queue_full += 1
                return False

    def take_dropped(self) -> int:
        """Drops since the last call (for the shared counter in the database)."""
        with self._lock:
            total = self.dropped
            delta, self._reported = total - self._reported, total
            return delta

    def flush(self, timeout_s: float = 30.0) -> bool:
        return self.processor.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        self.processor.shutdown()  # type: ignore[no-untyped-call]


def default_resource() -> Resource:
    """``service.name`` from ``OTEL_SERVICE_NAME`` (default ``adapt``), plus
    ``OTEL_RESOURCE_ATTRIBUTES``."""
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "adapt"}
    return Resource.create(attributes)


def to_readable(record: SpanRecord, resource: Resource) -> ReadableSpan:
    flags = TraceFlags(TraceFlags.SAMPLED)
    context = SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=flags)
    parent = (SpanContext(record.trace_id, record.parent_id, is_remote=False, trace_flags=flags)
              if record.parent_id is not None else None)
    status = (Status(StatusCode.ERROR, record.error[:1024]) if record.error
              else Status(StatusCode.UNSET))
    return ReadableSpan(
        name=record.name, context=context, parent=parent, resource=resource,
        attributes=record.attributes,
        kind=SpanKind.CLIENT if record.kind == "client" else SpanKind.INTERNAL,
        status=status, start_time=record.start_ns, end_time=record.end_ns,
        instrumentation_scope=SCOPE)


def otlp_exporter() -> SpanExporter:
    """The OTLP/HTTP (protobuf) exporter; it reads ``OTEL_EXPORTER_OTLP_ENDPOINT``,
    ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_EXPORTER_OTLP_TIMEOUT`` and their ``_TRACES_``
    variants itself."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    if protocol != "http/protobuf":
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s: adapt sends http/protobuf", protocol)
    return OTLPSpanExporter()


_pipeline: Pipeline | None = None
_pipeline_lock = threading.Lock()


def pipeline(max_queue_size: int = 2048) -> Pipeline | None:
    """This process's pipeline to the configured OTLP endpoint (None: not configured)."""
    global _pipeline
    if not configured():
        return None
    with _pipeline_lock:
        if _pipeline is None:
            _pipeline = Pipeline(otlp_exporter(), max_queue_size=max_queue_size)
            atexit.register(_pipeline.shutdown)
            log.info("OpenTelemetry: exporting task traces over OTLP")
        return _pipeline
