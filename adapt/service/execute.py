"""Run one persisted task: claim its lease, resume by replay, persist as it grows, finish.

Used by every worker kind, through the worker host (:mod:`adapt.service.host`). The lease is a
row condition: ``claim`` succeeds only for a queued task or a running task whose lease expired,
and bumps ``attempt``; every later write of this attempt is conditional on that attempt still
owning the lease, so a stale attempt can never write, and a task never runs twice at the same
time. One attempt is built by :func:`adapt.service.attempt.prepare_attempt`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from adapt.errors import (
    AwaitingApproval,
    Draining,
    EnvironmentUnavailable,
    InFlightCallRefused,
    ProviderUnavailable,
    UserError,
)
from adapt.service import approvals
from adapt.service.attempt import Attempt, prepare_attempt
from adapt.service.context import LIVENESS_BEATS as LIVENESS_BEATS
from adapt.service.context import Running
from adapt.service.context import ServiceContext as ServiceContext
from adapt.service.errors import LeaseLost, WrittenByNewerRelease
from adapt.service.faults import is_database_error, public_error
from adapt.store import approvals as approval_store
from adapt.store import task_rows
from adapt.store import webhooks as webhook_store

if TYPE_CHECKING:
    from adapt.telemetry.sink import OtelSink

log = logging.getLogger(__name__)


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
    worker owns it (or another asyncio task of this process runs it), it is already finished,
    or this attempt lost its lease midway.

    A database failure never ends the task: this worker waits until the database answers
    again and resumes the task by replay in a new attempt (unless another worker took the task
    over meanwhile, once the lease expired)."""
    with _slot(ctx, task_id) as slot:
        if slot is None:
            log.debug("task %s already runs in this process", task_id)
            return None
        return await _execute(ctx, task_id, slot)


@contextmanager
def _slot(ctx: ServiceContext, task_id: str) -> Iterator[Running | None]:
    """The task's slot in ``ctx.running`` for the asyncio task that runs this: the one the
    worker host made for it, or a new one, removed at the end; None when another asyncio task
    of this process has the task."""
    me = asyncio.current_task()
    if me is None:
        raise RuntimeError("execute_task must be awaited inside an asyncio task")
    slot = ctx.running.get(task_id)
    if slot is not None:
        yield slot if slot.task is me else None
        return
    slot = ctx.running[task_id] = Running(me)
    try:
        yield slot
    finally:
        if ctx.running.get(task_id) is slot:
            del ctx.running[task_id]


async def _execute(ctx: ServiceContext, task_id: str, slot: Running) -> str | None:
    attempt = await when_database_answers(ctx, lambda: claim(ctx, task_id),
                                          f"task {task_id}: claim")
    if attempt is None:
        log.debug("task %s not claimable (finished or leased)", task_id)
        return None
    while True:
        log.info("task %s: attempt %d on %s", task_id, attempt, ctx.worker_id)
        runner = asyncio.create_task(_run(ctx, task_id, attempt))
        slot.attempt, slot.runner = attempt, runner
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
            slot.attempt = slot.runner = None
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
    """Run one attempt; a failure that is not the database's ends the task (``error``,
    resumable) unless the attempt lost its lease or stopped for a shutdown."""
    run: Attempt | None = None

    async def settled() -> bool:
        """The write under way (the flush before a call that then failed) lands before the
        task ends with an error; False when this attempt lost its lease meanwhile."""
        try:
            if run is not None:
                await run.store.settle()
        except LeaseLost:
            log.warning("task %s: attempt %d lost its lease", task_id, attempt)
            return False
        return True

    async def fail(message: str) -> str | None:
        if not await settled():
            return None
        await _finish_with_error(ctx, task_id, attempt, message,
                                 run.trace if run is not None else None)
        return "error"

    try:
        run = await prepare_attempt(ctx, task_id, attempt)
        result = await run.run()
        if run.store.ended_in_replay is not None:  # its end would not be stored: end it here
            log.warning("task %s: attempt %d ended while replaying what was stored: %s",
                        task_id, attempt, result.error)
            return await fail(result.error or f"the run ended ({result.status}) before the "
                              "point it had reached; it cannot be resumed by replay")
        if run.config.approval.any and result.status in ("succeeded", "failed", "cancelled"):
            # requests an earlier attempt stored that nobody needs now (sibling nodes that
            # waited at the same time, when the run ended otherwise)
            async with ctx.sessions.begin() as session:
                await approval_store.withdraw(session, task_id, result.status)
        return result.status
    except LeaseLost:
        log.warning("task %s: attempt %d lost its lease", task_id, attempt)
        return None
    except Draining:
        log.info("task %s: attempt %d stopped for shutdown", task_id, attempt)
        return None
    except WrittenByNewerRelease as exc:
        # an upgrade under way: a newer worker runs it (the sweeper dispatches it again)
        log.warning("%s; handed back for a worker of that release", exc)
        await task_rows.release_leases(ctx.sessions, ctx.worker_id, [task_id])
        return None
    except AwaitingApproval as exc:
        if run is None or not await settled():
            return None
        wake = ctx.webhook_sender.wake if ctx.webhook_sender is not None else None
        return await approvals.wait(ctx.sessions, run.task, attempt, ctx.worker_id,
                                    exc.requests, wake,
                                    timeout_seconds=run.config.approval.timeout_seconds)
    except ProviderUnavailable as exc:
        log.warning("task %s: provider unavailable: %s", task_id, exc)
        return await fail(f"provider unavailable: {exc}")
    except EnvironmentUnavailable as exc:
        log.warning("task %s: environment unavailable: %s", task_id, exc)
        return await fail(f"environment unavailable: {exc}")
    except (UserError, InFlightCallRefused) as exc:
        return await fail(str(exc))
    except Exception as exc:
        if is_database_error(exc):
            raise  # execute_task resumes the task once the database answers
        log.exception("task %s failed unexpectedly", task_id)
        return await fail(public_error(exc))
    finally:
        if run is not None:
            run.close()
