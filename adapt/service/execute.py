"""Run one persisted task: claim its lease, resume by replay, persist as it grows, finish.

Used by every worker kind (Celery process, embedded server). The lease is a row condition:
``claim`` succeeds only for a queued task or a running task whose lease expired, and bumps
``attempt``; every later write of this attempt is conditional on that attempt still owning the
lease, so a stale attempt can never write, and a task never runs twice at the same time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from adapt.engine import RunConfig, run_task
from adapt.envs import registry
from adapt.errors import LeaseLost, UserError
from adapt.llm import ClientPool, Pricing
from adapt.llm.base import ChatModel, ChatResponse, Usage
from adapt.llm.recording import (
    RecordedCall,
    Recording,
    RecordingModel,
    ReplayCursor,
    ReplayModel,
)
from adapt.model_factory import ModelFactory
from adapt.settings import Settings
from adapt.store.db import create_engine, session_factory
from adapt.store.events import append_event
from adapt.store.models import EventRow, LLMCallRow, Task, utcnow
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
    _heartbeat: asyncio.Task[None] | None = None

    @classmethod
    def create(cls, settings: Settings, *, engine: AsyncEngine | None = None) -> ServiceContext:
        engine = engine or create_engine(settings.database_url,
                                         pool_size=settings.db_pool_size)
        return cls(settings, engine, session_factory(engine), ClientPool(),
                   Pricing.from_setting(settings.pricing))

    def ensure_heartbeat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(_heartbeat(self), name="adapt-heartbeat")

    async def aclose(self, *, dispose_engine: bool = True) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
        await self.pool.aclose()
        if dispose_engine:
            await self.engine.dispose()

    def price(self, model: str, usage: Usage, simulated: bool) -> float | None:
        return self.pricing.cost(model, usage, simulated=simulated)

    def load_model(self, spec: str) -> ChatModel:
        return ModelFactory(self.settings, pool=self.pool).build(spec)


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


async def _heartbeat(ctx: ServiceContext) -> None:
    """One heartbeat per process: renews all leases in one statement, and stops attempts whose
    lease another worker took over (their next write would be refused anyway)."""
    while True:
        await asyncio.sleep(ctx.settings.heartbeat_seconds)
        if not ctx.running:
            continue
        try:
            # shielded: a cancelled transaction must not leave SQLite's write lock behind
            owned = await asyncio.shield(renew_all(ctx))
        except asyncio.CancelledError:
            raise
        except Exception:  # a database hiccup: try again next beat; the lease has slack
            log.warning("heartbeat failed", exc_info=True)
            continue
        for task_id, (attempt, runner) in list(ctx.running.items()):
            if owned.get(task_id) != attempt and not runner.done():
                log.warning("task %s: attempt %d lost its lease; stopping it", task_id, attempt)
                runner.cancel()


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


async def execute_task(ctx: ServiceContext, task_id: str) -> str | None:
    """Claim and run ``task_id`` to the end. Returns its final status, or None when another
    worker owns it, it is already finished, or this attempt lost its lease midway."""
    attempt = await claim(ctx, task_id)
    if attempt is None:
        log.debug("task %s not claimable (finished or leased)", task_id)
        return None
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
    finally:
        if ctx.running.get(task_id, (None,))[0] == attempt:
            del ctx.running[task_id]


def _current_cancelling() -> bool:
    task = asyncio.current_task()
    return bool(task and task.cancelling())


async def _run(ctx: ServiceContext, task_id: str, attempt: int) -> str | None:
    async with ctx.sessions() as session:
        task = await session.get(Task, task_id)
    assert task is not None
    env = None
    try:
        recording, skip = await _load_replay(ctx, task_id)
        config = RunConfig.model_validate(task.run_config)
        validated = registry.validate_config(task.environment, task.environment_config)
        env = registry.create(task.environment)
        cursor = ReplayCursor()

        def wrap(spec: str) -> ChatModel:
            live = ctx.load_model(spec)
            return RecordingModel(ReplayModel(recording, live=live, cursor=cursor))

        executor = wrap(task.executor_model)
        planner = executor if task.planner_model == task.executor_model else wrap(
            task.planner_model)
        sink = DbSink(ctx.sessions, task_id, attempt, ctx.worker_id, skip=skip,
                      store_prompts=ctx.settings.store_prompts)
        if skip:
            log.info("task %s: resuming; replaying %d LLM calls and %d events", task_id,
                     len(recording), skip)
        result = await run_task(
            env, validated.model_dump(exclude_none=True), config, executor, planner,
            goal=task.goal, sink=sink, cancel=lambda: sink.cancel_requested, price=ctx.price,
        )
        return result.status
    except LeaseLost:
        log.warning("task %s: attempt %d lost its lease", task_id, attempt)
        return None
    except UserError as exc:
        await _finish_with_error(ctx, task_id, attempt, str(exc))
        return "error"
    except (OperationalError, InterfaceError):
        # the database is unreachable: leave the task to be resumed once the lease expires
        log.warning("task %s: database error; it resumes when its lease expires", task_id,
                    exc_info=True)
        raise
    except Exception as exc:
        log.exception("task %s failed unexpectedly", task_id)
        await _finish_with_error(ctx, task_id, attempt, f"internal error: {type(exc).__name__}: "
                                 f"{exc}")
        return "error"
    finally:
        if env is not None:
            env.close()
