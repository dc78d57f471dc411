"""Run one persisted task: claim its lease, resume by replay, persist as it grows, finish.

Used by every worker kind (Celery process, embedded server). The lease is a row condition:
``claim`` succeeds only for a queued task or a running task whose lease expired, and bumps
``attempt``; every later write of this attempt is conditional on that attempt still owning the
lease, so a stale attempt can never write, and a task never runs twice at the same time.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from adapt.engine import RunConfig, run_task
from adapt.envs import registry
from adapt.errors import Draining, LeaseLost, ProviderUnavailable, UserError
from adapt.llm import ClientPool, Pricing
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, Usage
from adapt.llm.recording import (
    RecordedCall,
    Recording,
    RecordingModel,
    ReplayCursor,
    ReplayModel,
)
from adapt.llm.retry import RetryBudget, RetryingModel
from adapt.model_factory import ModelFactory
from adapt.service.faults import is_database_error, public_error
from adapt.settings import Settings
from adapt.store import workers as registry_store
from adapt.store.db import create_engine, session_factory
from adapt.store.events import append_event
from adapt.store.models import EventRow, LLMCallRow, NodeRow, Task, utcnow
from adapt.store.sink import DbSink

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

    #: the queue this process serves ("embedded" for the in-process runner), for the registry
    queue: str = "adapt"

    @classmethod
    def create(cls, settings: Settings, *, engine: AsyncEngine | None = None) -> ServiceContext:
        engine = engine or create_engine(settings.database_url,
                                         pool_size=settings.db_pool_size)
        return cls(settings, engine, session_factory(engine), ClientPool(),
                   Pricing.from_setting(settings.pricing),
                   queue="embedded" if settings.embedded else settings.celery_queue)

    def ensure_heartbeat(self) -> None:
        """Start the process's heartbeat (lease renewal and the live-worker registry)."""
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(_heartbeat(self), name="adapt-heartbeat")

    async def aclose(self, *, dispose_engine: bool = True) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
            try:  # leave the registry at once rather than when the row expires
                await asyncio.wait_for(registry_store.forget(self.sessions, self.worker_id), 5)
            except Exception as exc:
                log.debug("could not remove worker %s from the registry: %s", self.worker_id,
                          type(exc).__name__)
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


class _LiveGate:
    """Refuses to start a live call while the process drains; counts the calls in flight."""

    def __init__(self, ctx: ServiceContext, inner: ChatModel) -> None:
        self.ctx, self.inner = ctx, inner
        self.name, self.simulated = inner.name, inner.simulated

    def __getattr__(self, name: str) -> object:  # optional capabilities (e.g. ``score``)
        return getattr(self.inner, name)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self.ctx.draining:
            raise Draining("the worker is shutting down")
        self.ctx.live_calls += 1
        try:
            return await self.inner.complete(request)
        finally:
            self.ctx.live_calls -= 1


async def claim(ctx: ServiceContext, task_id: str) -> int | None:
    """Take the task's lease; returns the new attempt number, or None if not claimable."""
    now = utcnow()
    lease = timedelta(seconds=ctx.settings.lease_seconds)
    stmt = (
        update(Task)
        .where(
            Task.id == task_id,
            or_(Task.status == "queued",
                (Task.status == "running") & (Task.lease_expires_at < now)),
        )
        .values(
            status="running", attempt=Task.attempt + 1, lease_owner=ctx.worker_id,
            lease_expires_at=now + lease, heartbeat_at=now,
            started_at=func.coalesce(Task.started_at, now), updated_at=now,
        )
        .returning(Task.attempt)
    )
    async with ctx.sessions.begin() as session:
        attempt = (await session.execute(stmt)).scalar_one_or_none()
    return None if attempt is None else int(attempt)


async def reclaim(ctx: ServiceContext, task_id: str, attempt: int) -> int | None:
    """Start a new attempt of a task this worker still holds as ``attempt`` (after a database
    failure interrupted it); None when another worker took it over meanwhile."""
    now = utcnow()
    stmt = (
        update(Task)
        .where(Task.id == task_id, Task.status == "running", Task.attempt == attempt,
               Task.lease_owner == ctx.worker_id)
        .values(attempt=Task.attempt + 1, heartbeat_at=now, updated_at=now,
                lease_expires_at=now + timedelta(seconds=ctx.settings.lease_seconds))
        .returning(Task.attempt)
    )
    async with ctx.sessions.begin() as session:
        new = (await session.execute(stmt)).scalar_one_or_none()
    return None if new is None else int(new)


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
    now = utcnow()
    stmt = (
        update(Task)
        .where(Task.lease_owner == ctx.worker_id, Task.status == "running")
        .values(lease_expires_at=now + timedelta(seconds=ctx.settings.lease_seconds),
                heartbeat_at=now)
        .returning(Task.id, Task.attempt)
    )
    async with ctx.sessions.begin() as session:
        rows = (await session.execute(stmt)).all()
    return {str(r[0]): int(r[1]) for r in rows}


#: a worker counts as live for this many heartbeat intervals after its last beat
LIVENESS_BEATS = 3


async def _beat(ctx: ServiceContext) -> None:
    if ctx.running:
        owned = await renew_all(ctx)
        for task_id, (attempt, runner) in list(ctx.running.items()):
            if owned.get(task_id) != attempt and not runner.done():
                log.warning("task %s: attempt %d lost its lease; stopping it", task_id, attempt)
                runner.cancel()
    await registry_store.beat(
        ctx.sessions, ctx.worker_id, queue=ctx.queue, hostname=socket.gethostname(),
        pid=os.getpid(), running=len(ctx.running),
        ttl=LIVENESS_BEATS * ctx.settings.heartbeat_seconds)


async def _heartbeat(ctx: ServiceContext) -> None:
    """One heartbeat per process: renews all leases in one statement, stops attempts whose
    lease another worker took over (their next write would be refused anyway), and keeps the
    process in the live-worker registry."""
    while True:
        try:
            # shielded: a cancelled transaction must not leave SQLite's write lock behind
            await asyncio.shield(_beat(ctx))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a database hiccup: try again next beat; leases have slack
            log.warning("heartbeat failed: %s", type(exc).__name__,
                        exc_info=not is_database_error(exc))
        await asyncio.sleep(ctx.settings.heartbeat_seconds)


async def _load_replay(ctx: ServiceContext, task_id: str) -> tuple[Recording, int]:
    async with ctx.sessions() as session:
        calls = (await session.execute(
            select(LLMCallRow).where(LLMCallRow.task_id == task_id).order_by(LLMCallRow.id)
        )).scalars().all()
        events = (await session.execute(
            select(func.count()).select_from(EventRow)
            .where(EventRow.task_id == task_id, EventRow.ordinal.is_not(None))
        )).scalar_one()
    recording = Recording(calls=[
        RecordedCall(index=i, fingerprint=c.request_fingerprint,
                     response=ChatResponse.model_validate(c.response))
        for i, c in enumerate(calls)
    ])
    return recording, int(events)


async def _finish_with_error(
    ctx: ServiceContext, task_id: str, attempt: int, message: str
) -> None:
    """End the task with ``error`` (outside the engine's event stream, so
    ``POST /tasks/{id}/resume`` can resume it by replay); nodes left running are closed."""
    now = utcnow()
    async with ctx.sessions.begin() as session:
        cond = (Task.attempt == attempt, Task.lease_owner == ctx.worker_id)
        await append_event(session, task_id, "task.finished",
                           {"status": "error", "result": None, "error": message},
                           conditions=cond)
        await session.execute(
            update(Task).where(Task.id == task_id, *cond).values(
                status="error", error=message, finished_at=now, updated_at=now,
                lease_owner=None, lease_expires_at=None)
        )
        await session.execute(
            update(NodeRow).where(NodeRow.task_id == task_id, NodeRow.status == "running")
            .values(status="failed", error=message, updated_at=now)
        )


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
    try:
        async with ctx.sessions() as session:
            task = await session.get(Task, task_id)
        assert task is not None
        recording, skip = await _load_replay(ctx, task_id)
        config = RunConfig.model_validate(task.run_config)
        validated = registry.validate_config(task.environment, task.environment_config)
        env = registry.create(task.environment)
        cursor = ReplayCursor()
        budget = RetryBudget(ctx.settings.llm_retry_budget)

        def wrap(spec: str) -> ChatModel:
            live = ctx.live_model(spec, budget)
            return RecordingModel(ReplayModel(recording, live=live, cursor=cursor))

        executor = wrap(task.executor_model)
        planner = executor if task.planner_model == task.executor_model else wrap(
            task.planner_model)
        sink = DbSink(ctx.sessions, task_id, attempt, ctx.worker_id, skip=skip,
                      store_prompts=ctx.settings.store_prompts)
        # a cancel requested while no worker ran the task is seen before the first live call
        # (not during the replay, whose events must equal the recorded ones)
        sink.cancel_requested = task.cancel_requested
        replayed = len(recording)

        def cancelled() -> bool:
            return sink.cancel_requested and cursor.position >= replayed

        if skip:
            log.info("task %s: resuming; replaying %d LLM calls and %d events", task_id,
                     len(recording), skip)
        result = await run_task(
            env, validated.model_dump(exclude_none=True), config, executor, planner,
            goal=task.goal, sink=sink, cancel=cancelled, price=ctx.price,
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
        await _finish_with_error(ctx, task_id, attempt, f"provider unavailable: {exc}")
        return "error"
    except UserError as exc:
        await _finish_with_error(ctx, task_id, attempt, str(exc))
        return "error"
    except Exception as exc:
        if is_database_error(exc):
            raise  # execute_task resumes the task once the database answers
        log.exception("task %s failed unexpectedly", task_id)
        await _finish_with_error(ctx, task_id, attempt, public_error(exc))
        return "error"
    finally:
        if env is not None:
            env.close()
