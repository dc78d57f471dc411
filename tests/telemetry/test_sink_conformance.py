"""The trace sink runs the sink conformance kit: after every flush, the span of every node that
ended so far has been exported, and nothing is left pending."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from adapt.engine.sinktesting import CHECKS, SinkCase, check_sink
from tests.sinkcases import ended_nodes, exported_nodes, otel_sink


@asynccontextmanager
async def otel_case() -> AsyncIterator[SinkCase]:
    sink, exported = otel_sink()

    async def stored() -> list[int]:
        return exported_nodes(exported)

    yield SinkCase(sink, stored=stored, expect=ended_nodes, pending=lambda: len(sink.pending))
    assert not sink.broken, "the sink stopped exporting after an error"


async def test_the_trace_sink_conforms() -> None:
    report = await check_sink(otel_case, name="OtelSink")
    assert report.passed == list(CHECKS)
