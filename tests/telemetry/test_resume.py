"""A task's trace through the service: the same span tree whether it ran in one attempt or was
resumed after a crash, with no span sent twice (real SQLite and PostgreSQL; the exporter is the
SDK's in-memory one, the backend test is test_phoenix.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import update

from adapt.service.execute import ServiceContext, execute_task
from adapt.sim import from_spec
from adapt.store.models import Task, utcnow
from adapt.telemetry.otlp import Pipeline
from adapt.telemetry.spans import span_id
from tests.service.helpers import insert_task, task_row
from tests.service.test_execute import SIM, Counting, make_ctx
from tests.telemetry.treeutil import Flat, from_sdk, structure


def traced(ctx: ServiceContext) -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    ctx.telemetry = Pipeline(memory, schedule_delay_millis=10)
    return memory


def spans_of(ctx: ServiceContext, memory: InMemorySpanExporter) -> list[Flat]:
    assert ctx.telemetry is not None and ctx.telemetry.flush(5)
    return from_sdk(memory.get_finished_spans())


async def settled_spans(ctx: ServiceContext, memory: InMemorySpanExporter) -> list[Flat]:
    """The spans once nothing more arrives (a background write's spans go when it lands)."""
    seen, quiet = -1, 0
    while quiet < 3:
        await asyncio.sleep(0.05)
        now = len(spans_of(ctx, memory))
        quiet, seen = (quiet + 1 if now == seen else 0), now
    return spans_of(ctx, memory)


async def one_attempt(database_url: str) -> list[Flat]:
    ctx = make_ctx(database_url, "w0")
    memory = traced(ctx)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "succeeded"
    spans = spans_of(ctx, memory)
    await ctx.aclose()
    return spans


async def test_a_resumed_task_sends_each_span_once_in_the_same_tree(database_url: str) -> None:
    reference = await one_attempt(database_url)
    assert len(reference) == len({s.span_id for s in reference}) > 30

    first = Counting(from_spec(SIM), hang_after=9)
    ctx1 = make_ctx(database_url, "w1", first)
    memory1 = traced(ctx1)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11})
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 10)
    run1.cancel()  # the worker dies mid-task; its open spans (the root's, ...) never end there
    with pytest.raises(asyncio.CancelledError):
        await run1
    crashed_at = time.time_ns()
    # the write of the flush before the hung call was under way: its spans go when it lands
    before = await settled_spans(ctx1, memory1)
    assert before and all(s.name != "invoke_workflow adapt" for s in before)

    ctx2 = make_ctx(database_url, "w2", from_spec(SIM))
    memory2 = traced(ctx2)
    async with ctx2.sessions.begin() as s:  # the lease expires: another worker resumes it
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    await asyncio.sleep(0.05)
    assert await execute_task(ctx2, task_id) == "succeeded"
    assert (await task_row(ctx2.sessions, task_id)).attempt == 2
    after = spans_of(ctx2, memory2)

    both = before + after
    assert len({s.span_id for s in both}) == len(both), "a replayed span was sent again"
    assert structure(both) == structure(reference), "the resumed trace differs from one run's"
    # the root node's span was open at the crash: sent by the attempt that ended it, starting
    # when the first attempt started it (the event log's time), not at the resume
    root = next(s for s in after if s.span_id == span_id(task_id, "node:1"))
    sdk_root = next(s for s in memory2.get_finished_spans()
                    if s.context.span_id == root.span_id)
    assert sdk_root.start_time is not None and sdk_root.start_time < crashed_at
    await ctx1.aclose()
    await ctx2.aclose()


async def test_a_task_the_service_ends_with_an_error_closes_its_open_spans(
    database_url: str
) -> None:
    ctx = make_ctx(database_url, "w1")
    memory = traced(ctx)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    calls = 0

    class Broken:
        name, simulated = "broken", True

        async def complete(self, request: object) -> object:
            nonlocal calls
            calls += 1
            if calls > 3:
                raise RuntimeError("boom")
            return await from_spec(SIM).complete(request)  # type: ignore[arg-type]

    ctx.load_model = lambda spec: Broken()  # type: ignore[method-assign,assignment,return-value]
    assert await execute_task(ctx, task_id) == "error"
    spans = spans_of(ctx, memory)
    assert len({s.span_id for s in spans}) == len(spans)
    (workflow,) = [s for s in spans if s.parent_id is None]
    assert workflow.attributes["adapt.task.status"] == "error"
    sdk = {s.context.span_id: s for s in memory.get_finished_spans()}
    assert sdk[workflow.span_id].status.status_code.name == "ERROR"
    assert sdk[span_id(task_id, "node:1")].status.status_code.name == "ERROR"
    await ctx.aclose()


async def test_spans_a_worker_could_not_send_are_counted_fleet_wide(database_url: str) -> None:
    """The backend refuses every batch: the task is unaffected, and the worker adds its drops
    to the counter /metrics reports (adapt_otel_spans_dropped)."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    from adapt.store.traces import SPANS_DROPPED, counter_values

    class Refusing(InMemorySpanExporter):
        def export(self, spans: object) -> SpanExportResult:  # type: ignore[override]
            return SpanExportResult.FAILURE

    ctx = make_ctx(database_url, "w1")
    ctx.telemetry = Pipeline(Refusing(), schedule_delay_millis=10)
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "succeeded"
    await ctx.aclose(dispose_engine=False)  # the worker's last beat records what it dropped
    async with ctx.sessions() as session:
        assert (await counter_values(session))[SPANS_DROPPED] == 39
    await ctx.engine.dispose()


async def test_a_task_stopped_by_the_provider_and_resumed_sends_each_span_once(
    database_url: str
) -> None:
    """The provider goes away: the service ends the task (resumable) and its open spans with
    it. Resumed, the rest of the tree arrives under those same spans, none sent twice."""
    from adapt.errors import ProviderError
    from adapt.service.resume import resume_task

    reference = await one_attempt(database_url)
    sim, calls = from_spec(SIM), 0

    class GoesAway:
        name, simulated = sim.name, True

        async def complete(self, request: object) -> object:
            nonlocal calls
            calls += 1
            if calls > 5:
                raise ProviderError("503 from the provider", retryable=True, status=503)
            return await sim.complete(request)  # type: ignore[arg-type]

    ctx1 = make_ctx(database_url, "w1", GoesAway(), llm_retry_budget=0)  # type: ignore[arg-type]
    memory1 = traced(ctx1)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11})
    assert await execute_task(ctx1, task_id) == "error"
    before = spans_of(ctx1, memory1)
    stopped = {s.span_id for s in before if s.name.startswith(("invoke_", "plan"))}
    assert span_id(task_id, "task") in stopped and span_id(task_id, "node:1") in stopped
    await ctx1.aclose()

    ctx2 = make_ctx(database_url, "w2", from_spec(SIM))
    memory2 = traced(ctx2)
    async with ctx2.sessions() as s:
        row = await s.get(Task, task_id)
        assert row is not None
        _, resumed = await resume_task(s, row)
    assert resumed and await execute_task(ctx2, task_id) == "succeeded"
    after = spans_of(ctx2, memory2)
    both = before + after
    assert len({s.span_id for s in both}) == len(both), "a span was sent twice"
    assert not stopped & {s.span_id for s in after}
    # the call that failed has its own span (ERROR), sent by the first attempt; the resumed
    # attempt's answered call is the one the uninterrupted run has
    (failed,) = [s for s in both if s.attributes.get("error.type") == "ProviderUnavailable"]
    assert failed in before and failed.name.startswith(("text_completion", "chat"))
    assert structure(s for s in both if s is not failed) == structure(reference)
    await ctx2.aclose()
