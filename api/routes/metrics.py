"""``/metrics``: Prometheus text, computed from the database at scrape time.

No per-process state: every number comes from the database (all tenants), so any API replica
reports the same values. The queries run first (async); a custom collector then turns the
snapshot into metric families for ``prometheus_client``.
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

from adapt.store.queries import Histogram, MetricsSnapshot, metrics_snapshot
from api.deps import MetricsAccessDep, SessionDep
from api.schemas import Problem

router = APIRouter(tags=["health"])


def _histogram(name: str, doc: str, h: Histogram) -> HistogramMetricFamily:
    buckets = [(f"{bound:g}", float(count)) for bound, count in h.buckets]
    buckets.append(("+Inf", float(h.count)))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=h.total)


class SnapshotCollector(Collector):
    """Exposes one :class:`MetricsSnapshot` (queried for this scrape)."""

    def __init__(self, snap: MetricsSnapshot) -> None:
        self.snap = snap

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
    snap = await metrics_snapshot(session)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snap))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
