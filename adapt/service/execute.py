"""Run one persisted task: claim its lease, resume by replay, persist as it grows, finish.

Used by every worker kind (Celery process, embedded server). The lease is a row condition:
``claim`` succeeds only for a queued task or a running task whose lease expired, and bumps
``attempt``; every later write of this attempt is conditional on that attempt still owning the
lease, so a stale attempt can never write, and a task never runs twice at the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from adapt.engine import RunConfig, run_task
from adapt.engine.events import FanoutSink, TreeSink
from adapt.envs import registry
from adapt.errors import Draining, LeaseLost, ProviderUnavailable, TaskGone, UserError
from adapt.llm import ClientPool, Pricing
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, Usage, WrapperModel
from adapt.llm.recording import (
    RecordedCall,
    Recording,
    RecordingModel,
    ReplayCursor,
    ReplayModel,
)
from adapt.llm.retry import RetryBudget, RetryingModel
from adapt.service.faults import is_database_error, public_error
from adapt.service.model_factory import ModelFactory
from adapt.service.webhooks import WebhookSender, WebhookSink
from adapt.settings import Settings
from adapt.store import task_rows
from adapt.store import traces as trace_store
from adapt.store import webhooks as webhook_store
from adapt.store import workers as registry_store
from adapt.store.db import create_engine, session_factory
from adapt.store.sink import DbSink
from adapt.telemetry import configured as telemetry_configured

if TYPE_CHECKING:
    from adapt.telemetry.otlp import Pipeline
    from adapt.telemetry.sink import OtelSink

log = logging.getLogger(__name__)


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class ServiceContext:
    """Per-process (per event loop) resources shared by every task the process runs."""

    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    pool: ClientPool
    pricing: Pricing
    worker_id: str = field(default_factory=default_worker_id)
    #: task id -> (attempt, the asyncio task running it) for every task this process runs
    running: dict[str, tuple[int, asyncio.Task[Any]]] = field(default_factory=dict)
    #: set on shutdown: no new LLM call starts (the calls in flight finish and are recorded)
    draining: bool = False
    #: LLM calls in flight (sent to the provider, answer not yet returned)
    live_calls: int = 0
    _heartbeat: asyncio.Task[None] | None = None
    #: the beat under way (shielded from the heartbeat's cancellation; ``aclose`` waits for it)
    _beating: asyncio.Future[None] | None = None
    _webhooks: asyncio.Task[None] | None = None
    #: sends this process's (and any other's) due webhook deliveries; see ensure_heartbeat
    webhook_sender: WebhookSender | None = None

    #: the queue this process serves ("embedded" for the in-process runner), for the registry
    queue: str = "adapt"
    #: the process's trace export (None: OTEL_EXPORTER_OTLP_ENDPOINT unset; see adapt.telemetry)
    telemetry: Pipeline | None = None

    @classmethod
    def create(cls, settings: Settings, *, engine: AsyncEngine | None = None) -> ServiceContext:
        engine = engine or create_engine(settings.database_url,
                                         pool_size=settings.db_pool_size)
        return cls(settings, engine, session_factory(engine), ClientPool(),
                   Pricing.from_setting(settings.pricing),
                   queue="embedded" if settings.embedded else settings.celery_queue,
                   telemetry=_telemetry(settings))

    def ensure_heartbeat(self) -> None:
        """Start the process's heartbeat (lease renewal and the live-worker registry)."""
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(_heartbeat(self), name="adapt-heartbeat")
        if self._webhooks is None or self._webhooks.done():
            self.webhook_sender = WebhookSender(self.settings, self.sessions, self.worker_id)
            self._webhooks = asyncio.create_task(self.webhook_sender.run(),
                                                 name="adapt-webhooks")

    async def aclose(self, *, dispose_engine: bool = True) -> None:
        if self._webhooks is not None:
            self._webhooks.cancel()
            await asyncio.gather(self._webhooks, return_exceptions=True)
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
            if self._beating is not None:  # its lease renewal must not land after the close
                await asyncio.gather(self._beating, return_exceptions=True)
            try:  # leave the registry at once rather than when the row expires
                await asyncio.wait_for(registry_store.forget(self.sessions, self.worker_id), 5)
            except Exception as exc:
                log.debug("could not remove worker %s from the registry: %s", self.worker_id,
                          type(exc).__name__)
        if self.telemetry is not None:  # what this process's tasks ended goes out now
            await asyncio.to_thread(self.telemetry.flush, 5.0)
            with contextlib.suppress(Exception):
                await record_dropped_spans(self)
        await self.pool.aclose()
        if dispose_engine:
            await self.engine.dispose()

    def price(self, model: str, usage: Usage, simulated: bool) -> float | None:
        return self.pricing.cost(model, usage, simulated=simulated)

    def load_model(self, spec: str) -> ChatModel:
        """The live model for ``spec``; its client does not retry (``live_model`` does)."""
        return ModelFactory(self.settings, pool=self.pool, client_retries=0).build(spec)

    def live_model(self, spec: str, budget: RetryBudget) -> ChatModel:
        """``spec``'s model as a task uses it: transient errors retried within ``budget``, and
        no new call started while the process drains."""
        s = self.settings
        return _LiveGate(self, RetryingModel(self.load_model(spec), budget,
                                             max_retries=s.llm_max_retries,
                                             max_wait=s.llm_retry_max_wait))


def _telemetry(settings: Settings) -> Pipeline | None:
    """The process's OTLP pipeline when the operator configured an endpoint (the SDK is imported
    only then)."""
    if not telemetry_configured():
        return None
    try:
        from adapt.telemetry.otlp import pipeline
    except ModuleNotFoundError as exc:
        if not is_missing_otel(exc):
            raise  # a real import error, not the extra missing
        log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but the 'otel' extra is not installed "
                    "(pip install 'adapt[otel]'): no traces are exported")
        return None
    return pipeline(settings.otel_max_queue_size)


def is_missing_otel(exc: ModuleNotFoundError) -> bool:
    """Whether ``exc`` says OpenTelemetry (the ``otel`` extra) is not installed."""
    return (exc.name or "").split(".")[0] == "opentelemetry"


async def record_dropped_spans(ctx: ServiceContext) -> None:
    """Add the spans this process dropped since the last call to the fleet-wide counter."""
    if ctx.telemetry is not None:
        dropped = ctx.telemetry.take_dropped()
        if dropped:
            await trace_store.add_to_counter(ctx.sessions, trace_store.SPANS_DROPPED, dropped)


class _LiveGate(WrapperModel):
    """Refuses to start a live call (a completion or a scoring call) while the process drains;
    counts the calls in flight."""

    def __init__(self, ctx: ServiceContext, inner: ChatModel) -> None:
        super().__init__(inner)
        self.ctx = ctx

    async def complete(self, request: ChatRequest) -> ChatResponse:
        with self._live_call():
            return await self.wrapped.complete(request)

    async def wrap_score(self, prompt: str, continuation: str) -> list[float] | None:
        """``score``, offered when the wrapped model scores (``WrapperModel``)."""
        with self._live_call():
            logprobs: list[float] | None = await self.wrapped.score(  # type: ignore[attr-defined]
                prompt, continuation)
            return logprobs

    @contextlib.contextmanager
    def _live_call(self) -> Iterator[None]:
        if self.ctx.draining:
            raise Draining("the worker is shutting down")
        self.ctx.live_calls += 1
        try:
            yield
        finally:
            self.ctx.live_calls -= 1


async def claim(ctx: ServiceContext, task_id: str) -> int | None:
    """Take the task's lease; returns the new attempt number, or None if not claimable."""
    return await task_rows.claim(ctx.sessions, task_id, ctx.worker_id,
                                 ctx.settings.lease_seconds)


async def reclaim(ctx: ServiceContext, task_id: str, attempt: int) -> int | None:
    """Start a new attempt of a task this worker still holds as ``attempt`` (after a database
    failure interrupted it); None when another worker took it over meanwhile."""
    return await task_rows.reclaim(ctx.sessions, task_id, attempt, ctx.worker_id,
                                   ctx.settings.lease_seconds)


#: the longest pause between two probes while waiting for the database to come back
DB_RETRY_MAX = 2.0


async def when_database_answers(ctx: ServiceContext, action: Any, what: str) -> Any:
    """``await action()`` until it does not fail on the database (probing with backoff)."""
    delay = 0.1
    while True:
        try:
            return await action()
        except Exception as exc:
            if not is_database_error(exc):
                raise
            log.info("%s: database unavailable (%s); retrying in %.1fs", what,
                     type(exc).__name__, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, DB_RETRY_MAX)


async def renew_all(ctx: ServiceContext) -> dict[str, int]:
    """Extend every lease this worker holds; returns task id -> attempt still owned."""
    return await task_rows.renew_leases(ctx.sessions, ctx.worker_id,
                                        ctx.settings.lease_seconds)


#: a worker counts as live for this many heartbeat intervals after its last beat
LIVENESS_BEATS = 3


async def _beat(ctx: ServiceContext) -> None:
    if ctx.running:
        # only attempts claimed before the renewal started can be judged by its answer: one
        # claimed while it was in flight is missing from it although its lease is fresh
        before = dict(ctx.running)
        owned = await renew_all(ctx)
        for task_id, (attempt, runner) in before.items():
            if ctx.running.get(task_id) != (attempt, runner):
                continue  # finished or restarted meanwhile
            if owned.get(task_id) != attempt and not runner.done():
                log.warning("task %s: attempt %d lost its lease; stopping it", task_id, attempt)
                runner.cancel()
    await registry_store.beat(
        ctx.sessions, ctx.worker_id, queue=ctx.queue, hostname=socket.gethostname(),
        pid=os.getpid(), running=len(ctx.running),
        ttl=LIVENESS_BEATS * ctx.settings.heartbeat_seconds)
    await record_dropped_spans(ctx)


async def _heartbeat(ctx: ServiceContext) -> None:
    """One heartbeat per process: renews all leases in one statement, stops attempts whose
    lease another worker took over (their next write would be refused anyway), and keeps the
    process in the live-worker registry."""
    while True:
        try:
            # shielded: a cancelled transaction must not leave SQLite's write lock behind
            ctx._beating = asyncio.ensure_future(_beat(ctx))
            await asyncio.shield(ctx._beating)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a database hiccup: try again next beat; leases have slack
            log.warning("heartbeat failed: %s", type(exc).__name__,
                        exc_info=not is_database_error(exc))
        await asyncio.sleep(ctx.settings.heartbeat_seconds)


async def _load_replay(ctx: ServiceContext, task_id: str) -> tuple[Recording, int]:
    calls, events = await task_rows.replay_material(ctx.sessions, task_id)
    recording = Recording(calls=[
        RecordedCall(index=i, fingerprint=fingerprint,
                     response=ChatResponse.model_validate(response))
        for i, (fingerprint, response) in enumerate(calls)
    ])
    return recording, events


async def _finish_with_error(
    ctx: ServiceContext, task_id: str, attempt: int, message: str,
    trace: OtelSink | None = None,
) -> None:
    """End the task with ``error`` (outside the engine's event stream, so
    ``POST /tasks/{id}/resume`` can resume it by replay); nodes left running are closed."""
    async def report(session: AsyncSession) -> None:  # the end and its webhooks, or neither
        await webhook_store.record_end(session, task_id, f"error:{attempt}", "error", message)

    if not await task_rows.finish_with_error(ctx.sessions, task_id, attempt, ctx.worker_id,
                                             message, also=report):
        log.warning("task %s: attempt %d lost its lease before it could record: %s", task_id,
                    attempt, message)
    elif trace is not None:  # the open spans end with the task
        trace.abort(message)


async def execute_task(ctx: ServiceContext, task_id: str) -> str | None:
    """Claim and run ``task_id`` to the end. Returns its final status, or None when another
    worker owns it, it is already finished, or this attempt lost its lease midway.

    A database failure never ends the task: this worker waits until the database answers
    again and resumes the task by replay in a new attempt (unless another worker took the task
    over meanwhile, once the lease expired)."""
    attempt = await when_database_answers(ctx, lambda: claim(ctx, task_id),
                                          f"task {task_id}: claim")
    if attempt is None:
        log.debug("task %s not claimable (finished or leased)", task_id)
        return None
    while True:
        log.info("task %s: attempt %d on %s", task_id, attempt, ctx.worker_id)
        runner = asyncio.create_task(_run(ctx, task_id, attempt))
        ctx.running[task_id] = (attempt, runner)
        ctx.ensure_heartbeat()
        try:
            return await runner
        except asyncio.CancelledError:
            if runner.cancelled() and not _current_cancelling():
                return None  # stopped by the heartbeat: the lease is someone else's now
            raise
        except Exception as exc:
            if not is_database_error(exc):
                raise
            log.warning("task %s: attempt %d interrupted by a database failure (%s); it "
                        "resumes here once the database answers", task_id, attempt,
                        type(exc).__name__)
        finally:
            if ctx.running.get(task_id, (None,))[0] == attempt:
                del ctx.running[task_id]
        attempt = await when_database_answers(
            ctx, functools.partial(reclaim, ctx, task_id, attempt), f"task {task_id}: resume")
        if attempt is None:
            log.info("task %s: taken over by another worker while the database was away",
                     task_id)
            return None


async def drain(ctx: ServiceContext, tasks: list[asyncio.Task[Any]], timeout: float) -> None:
    """Stop ``tasks`` (asyncio tasks running :func:`execute_task`) for a shutdown: no new LLM
    call starts, the calls in flight have ``timeout`` seconds to be answered and recorded (each
    task then stops at its next call), and whatever still runs after that is cancelled."""
    ctx.draining = True
    pending = [t for t in tasks if not t.done()]
    if pending and timeout > 0:
        log.info("draining %d task(s) (%d LLM call(s) in flight), up to %.3gs", len(pending),
                 ctx.live_calls, timeout)
        _, still = await asyncio.wait(pending, timeout=timeout)
        pending = list(still)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _current_cancelling() -> bool:
    task = asyncio.current_task()
    return bool(task and task.cancelling())


async def _run(ctx: ServiceContext, task_id: str, attempt: int) -> str | None:
    env = None
    trace: OtelSink | None = None
    sink: DbSink | None = None

    async def settled() -> bool:
        """The write under way (the flush before a call that then failed) lands before the
        task ends with an error; False when this attempt lost its lease meanwhile."""
        try:
            if sink is not None:
                await sink.settle()
        except LeaseLost:
            log.warning("task %s: attempt %d lost its lease", task_id, attempt)
            return False
        return True

    try:
        task = await task_rows.load(ctx.sessions, task_id)
        if task is None:
            raise TaskGone(f"task {task_id} no longer exists")
        recording, skip = await _load_replay(ctx, task_id)
        config = RunConfig.model_validate(task.run_config)
        env = registry.create(task.environment)
        cursor = ReplayCursor()
        budget = RetryBudget(ctx.settings.llm_retry_budget)

        def wrap(spec: str) -> ChatModel:
            live = ctx.live_model(spec, budget)
            return RecordingModel(ReplayModel(recording, live=live, cursor=cursor))

        executor = wrap(task.executor_model)
        planner = executor if task.planner_model == task.executor_model else wrap(
            task.planner_model)
        # a cascade (executor.models, checked at submission like executor.model): its first
        # model is the task's executor model
        cascade = [executor, *(wrap(spec) for spec in config.executor.models[1:])]
        sink = DbSink(ctx.sessions, task_id, attempt, ctx.worker_id, skip=skip,
                      store_prompts=ctx.settings.store_prompts)
        # a cancel requested while no worker ran the task is seen before the first live call
        # (not during the replay, whose events must equal the recorded ones)
        sink.cancel_requested = task.cancel_requested
        replayed = len(recording)
        sinks: list[TreeSink] = []
        endpoints = await webhook_store.targets(ctx.sessions, task_id, task.tenant)
        if endpoints:
            wake = ctx.webhook_sender.wake if ctx.webhook_sender is not None else None
            sinks.append(WebhookSink(ctx.sessions, task_id, endpoints, wake=wake))

        if ctx.telemetry is not None:
            trace = await _trace_sink(ctx, task, skip, sink)
        tail: list[TreeSink] = [sink] if trace is None else [sink, trace]

        def cancelled() -> bool:
            return sink.cancel_requested and cursor.position >= replayed

        if skip:
            log.info("task %s: resuming; replaying %d LLM calls and %d events", task_id,
                     len(recording), skip)
        result = await run_task(
            # validated once, by run_task (the API validated it before storing it)
            env, task.environment_config, config, cascade, planner,
            goal=task.goal, sink=FanoutSink([*sinks, *tail]) if len(sinks) + len(tail) > 1
            else sink,
            cancel=cancelled, price=ctx.price,
        )
        return result.status
    except LeaseLost:
        log.warning("task %s: attempt %d lost its lease", task_id, attempt)
        return None
    except Draining:
        log.info("task %s: attempt %d stopped for shutdown", task_id, attempt)
        return None
    except ProviderUnavailable as exc:
        log.warning("task %s: provider unavailable: %s", task_id, exc)
        if not await settled():
            return None
        await _finish_with_error(ctx, task_id, attempt, f"provider unavailable: {exc}", trace)
        return "error"
    except UserError as exc:
        if not await settled():
            return None
        await _finish_with_error(ctx, task_id, attempt, str(exc), trace)
        return "error"
    except Exception as exc:
        if is_database_error(exc):
            raise  # execute_task resumes the task once the database answers
        log.exception("task %s failed unexpectedly", task_id)
        if not await settled():
            return None
        await _finish_with_error(ctx, task_id, attempt, public_error(exc), trace)
        return "error"
    finally:
        if env is not None:
            env.close()


async def _trace_sink(ctx: ServiceContext, task: Any, skip: int, sink: DbSink) -> OtelSink:
    """The task's span sink; a resumed attempt gets the event log's times for its replay."""
    from adapt.telemetry.history import ns, task_info
    from adapt.telemetry.sink import OtelSink, Replay
    from adapt.telemetry.spans import TraceBuilder

    if ctx.telemetry is None:
        raise RuntimeError("trace export is not configured")
    replay = Replay()
    if skip or task.attempt > 1:
        recorded = await trace_store.event_times(ctx.sessions, task.id)
        replay = Replay({k: ns(v) for k, v in recorded.times.items()},
                        [(after, ns(at)) for after, at in recorded.aborts])
    builder = TraceBuilder(task_info(task), content=ctx.settings.otel_capture_content)
    return OtelSink(builder, ctx.telemetry.export, skip=skip, replay=replay,
                    writing=sink.writing)
