"""``/metrics``: Prometheus text, computed from the database at scrape time.

No per-process state: every number comes from the database (all tenants), so any API replica
reports the same values. The queries run first (async, :func:`adapt.service.operations.metrics`);
a custom collector then turns the snapshot into metric families for ``prometheus_client``.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from adapt.service import operations
from adapt.service.operations import (
    DURATION_BUCKETS,
    SPANS_DROPPED,
    TOKEN_BUCKETS,
    GenAIHistograms,
    Histogram,
    MetricsSnapshot,
)
from adapt.telemetry.semconv import provider
from api.deps import MetricsAccessDep, SessionDep
from api.schemas import Problem

router = APIRouter(tags=["health"])


def _histogram(name: str, doc: str, h: Histogram) -> HistogramMetricFamily:
    buckets = [(f"{bound:g}", float(count)) for bound, count in h.buckets]
    buckets.append(("+Inf", float(h.count)))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=h.total)


class SnapshotCollector(Collector):
    """Exposes one :class:`MetricsSnapshot` (queried for this scrape)."""

    def __init__(self, snap: MetricsSnapshot, genai: list[GenAIHistograms] | None = None,
                 counters: dict[str, int] | None = None) -> None:
        self.snap = snap
        self.genai = genai or []
        self.counters = counters or {}

    def collect(self) -> Iterator[Metric]:
        s = self.snap
        tasks = GaugeMetricFamily("adapt_tasks", "Tasks by status.", labels=["status"])
        for status, count in sorted(s.tasks_by_status.items()):
            tasks.add_metric([status], count)
        yield tasks
        yield GaugeMetricFamily("adapt_tasks_cancel_requested",
                                "Tasks whose cancellation was requested.",
                                value=s.cancel_requested)
        yield CounterMetricFamily("adapt_nodes", "Tree nodes created.", value=s.nodes)
        yield CounterMetricFamily("adapt_llm_calls", "LLM calls made.", value=s.llm_calls)
        yield CounterMetricFamily("adapt_llm_prompt_tokens", "Prompt tokens sent.",
                                  value=s.prompt_tokens)
        yield CounterMetricFamily("adapt_llm_completion_tokens", "Completion tokens received.",
                                  value=s.completion_tokens)
        yield CounterMetricFamily("adapt_llm_cost_usd", "Known LLM cost in US dollars.",
                                  value=s.cost_usd)
        yield CounterMetricFamily("adapt_llm_retries", "Transient provider errors (429, 5xx, "
                                  "timeouts) retried before a recorded answer.",
                                  value=s.llm_retries)
        yield GaugeMetricFamily("adapt_workers_live", "Worker processes whose heartbeat is "
                                "fresh (all queues).", value=s.live_workers)
        yield _histogram("adapt_llm_call_latency_seconds", "LLM call latency.", s.llm_latency)
        yield _histogram("adapt_task_wall_seconds", "Wall time of finished tasks (start to "
                         "finish).", s.task_wall)
        yield CounterMetricFamily(
            "adapt_otel_spans_dropped", "Trace spans workers dropped rather than wait (export "
            "queue full, or the OTLP endpoint failed).", value=self.counters.get(SPANS_DROPPED, 0))
        yield from genai_families(self.genai)


def _buckets(bounds: tuple[float, ...], counts: list[int], total: int) -> list[tuple[str, float]]:
    out = [(f"{bound:g}", float(n)) for bound, n in zip(bounds, counts, strict=True)]
    return [*out, ("+Inf", float(total))]


def genai_families(groups: list[GenAIHistograms]) -> Iterator[Metric]:
    """The GenAI semantic conventions' client metrics, from every recorded call:
    ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` (in Prometheus
    naming), with the conventions' bucket boundaries."""
    labels = ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model"]
    tokens = HistogramMetricFamily(
        "gen_ai_client_token_usage", "Number of input and output tokens used (GenAI semantic "
        "conventions), per LLM call.", labels=[*labels, "gen_ai_token_type"])
    duration = HistogramMetricFamily(
        "gen_ai_client_operation_duration_seconds", "GenAI operation duration (GenAI semantic "
        "conventions), per LLM call.", labels=labels)
    for g in groups:
        names = [g.operation, provider(g.model), g.model]
        for token_type, (total, counts) in (("input", g.input_tokens),
                                            ("output", g.output_tokens)):
            tokens.add_metric([*names, token_type], _buckets(TOKEN_BUCKETS, counts, g.count),
                              total)
        duration.add_metric(names, _buckets(DURATION_BUCKETS, g.duration[1], g.count),
                            g.duration[0])
    yield tokens
    yield duration


@router.get(
    "/metrics",
    summary="Prometheus metrics (from the database)",
    description="Aggregates every tenant, so it is protected apart from the API keys: send "
    "`Authorization: Bearer <ADAPT_METRICS_TOKEN>`. Without that setting it answers only while "
    "the API runs open.",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
                     "description": "Prometheus text exposition format"},
               401: {"model": Problem, "description": "Missing or wrong metrics token"}},
    dependencies=[MetricsAccessDep],
)
async def metrics(session: SessionDep) -> Response:
    figures = await operations.metrics(session)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(figures.snapshot, figures.genai, figures.counters))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
