"""A worker process's context: what every task it runs shares, the tasks in flight, and the
heartbeat that keeps their leases.

One :class:`ServiceContext` per process (per event loop): the database engine and sessions,
the model clients' connection pool, pricing, the trace export and the webhook sender; the
registry of the tasks the process works on (:attr:`ServiceContext.running`, the one in-flight
registry: the worker host, :func:`~adapt.service.execute.execute_task` and the heartbeat all
read it); and the heartbeat, which renews every lease the process holds in one statement and
stops an attempt whose lease another worker took over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from adapt.errors import Draining
from adapt.llm import ClientPool, Pricing
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, Usage, WrapperModel
from adapt.llm.retry import RetryBudget, RetryingModel
from adapt.service import remote_envs
from adapt.service.faults import is_database_error
from adapt.service.model_factory import ModelFactory
from adapt.service.open_files import ensure_open_files
from adapt.service.webhooks import WebhookSender
from adapt.settings import Settings
from adapt.store import task_rows
from adapt.store import traces as trace_store
from adapt.store import workers as registry_store
from adapt.store.db import create_engine, session_factory
from adapt.telemetry import configured as telemetry_configured

if TYPE_CHECKING:
    from adapt.telemetry.otlp import Pipeline

log = logging.getLogger(__name__)


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class Running:
    """A task this process works on: the asyncio task doing it (a shutdown drains it), and,
    once claimed, the attempt it holds and that attempt's run (which the heartbeat stops when
    the lease is lost)."""

    task: asyncio.Task[Any]
    attempt: int | None = None
    runner: asyncio.Task[Any] | None = None


@dataclass
class ServiceContext:
    """Per-process (per event loop) resources shared by every task the process runs."""

    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    pool: ClientPool
    pricing: Pricing
    worker_id: str = field(default_factory=default_worker_id)
    #: task id -> the task's slot, for every task this process works on (waiting to start,
    #: claiming, running); a task id has one slot at a time
    running: dict[str, Running] = field(default_factory=dict)
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
        remote_envs.register(settings)  # the operator's remote environments (refused: raises)
        ensure_open_files(settings.model_connections + 2 * settings.db_pool_size)
        engine = engine or create_engine(settings.database_url,
                                         pool_size=settings.db_pool_size)
        return cls(settings, engine, session_factory(engine),
                   ClientPool(max_connections=settings.model_connections),
                   Pricing(settings.pricing),
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

    def attempts(self) -> dict[str, tuple[int, asyncio.Task[Any]]]:
        """Task id -> (attempt, its run) for every attempt this process holds now."""
        return {task_id: (slot.attempt, slot.runner) for task_id, slot in self.running.items()
                if slot.attempt is not None and slot.runner is not None}

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


async def renew_all(ctx: ServiceContext) -> dict[str, int]:
    """Extend every lease this worker holds; returns task id -> attempt still owned."""
    return await task_rows.renew_leases(ctx.sessions, ctx.worker_id,
                                        ctx.settings.lease_seconds)


#: a worker counts as live for this many heartbeat intervals after its last beat
LIVENESS_BEATS = 3


async def _beat(ctx: ServiceContext) -> None:
    attempts = ctx.attempts()
    if attempts:
        # only attempts claimed before the renewal started can be judged by its answer: one
        # claimed while it was in flight is missing from it although its lease is fresh
        owned = await renew_all(ctx)
        missing = {task_id: held for task_id, held in attempts.items()
                   if owned.get(task_id) != held[0]}
        # an attempt that ended its task since is not renewed either: it is not lost
        ended = (await task_rows.ended_by(ctx.sessions, ctx.worker_id, list(missing))
                 if missing else set())
        for task_id, (attempt, runner) in missing.items():
            slot = ctx.running.get(task_id)
            if slot is None or slot.attempt != attempt or slot.runner is not runner:
                continue  # finished or restarted meanwhile
            if task_id not in ended and not runner.done():
                log.warning("task %s: attempt %d lost its lease; stopping it", task_id, attempt)
                runner.cancel()
    await registry_store.beat(
        ctx.sessions, ctx.worker_id, queue=ctx.queue, hostname=socket.gethostname(),
        pid=os.getpid(), running=len(ctx.attempts()),
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

