"""Every write on a task row, in one place (submit, claim and lease, cancel, resume, finish,
the sweeper's marks, deletion), and the reads the service decides on.

Each write is one conditional ``UPDATE ... RETURNING`` (or the insert): the condition says in
which state the row must be (``status = 'queued'``, this attempt still holding the lease, ...),
so concurrent writers never both win; a write whose condition failed returns None / False.

Event sequence numbers come from ``tasks.last_seq``: a write that also appends an event bumps
``last_seq`` in the same UPDATE, which locks the task row until commit (PostgreSQL) or holds the
write lock (SQLite), so concurrent writers never reuse or skip a number. ``append_event`` does
the same for an event alone; ``DbSink``'s batch writers (``adapt.store.batch``) do the same for
a batch of them, in the one statement (or transaction) that writes the batch.

Functions taking a session run in the caller's transaction (``submit``, ``cancel`` and
``resume`` commit it); functions taking a session factory run their own.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import ColumnElement, delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import ApprovalRequestedData, EventType, FinishedData, ResumedData
from adapt.engine.tree import FINAL_STATUSES
from adapt.service.errors import TaskGone as TaskGone
from adapt.store import metrics
from adapt.store.models import TASK_TABLE, EventRow, LLMCallRow, NodeRow, Task, utcnow
from adapt.store.responses import full_response
from adapt.store.text import storable

log = logging.getLogger(__name__)

#: the error of a task cancelled before a worker started it
CANCELLED_BEFORE_START = "cancelled before it started"
#: the error of a task cancelled while it waited for an approval
CANCELLED_WHILE_WAITING = "cancelled while it waited for an approval"
#: most tasks one sweep hands out (the next sweep takes the rest)
SWEEP_LIMIT = 500


#: more writes a caller needs in the same transaction as a task's transition (e.g. the
#: webhook deliveries of its end: both or neither are stored)
Also = Callable[[AsyncSession], Awaitable[None]]


# -- the event log --------------------------------------------------------------------------
async def _transition(
    session: AsyncSession,
    task_id: str,
    conditions: Sequence[ColumnElement[bool]],
    values: Mapping[str, Any],
    type_: EventType,
    payload: BaseModel | dict[str, Any],
    *,
    ordinal: int | None = None,
) -> int | None:
    """Update the task row where ``conditions`` hold, taking the next event number in the same
    statement, and append the event; returns its number, None when no row matched."""
    seq = (await session.execute(
        update(Task)
        .where(Task.id == task_id, *conditions)
        .values(**values, last_seq=Task.last_seq + 1)
        .returning(Task.last_seq)
    )).scalar_one_or_none()
    if seq is None:
        return None
    data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
    session.add(EventRow(task_id=task_id, seq=int(seq), type=type_, payload=storable(data),
                         ordinal=ordinal, created_at=utcnow()))
    return int(seq)


async def append_event(
    session: AsyncSession,
    task_id: str,
    type_: EventType,
    payload: BaseModel | dict[str, Any],
    *,
    ordinal: int | None = None,
    conditions: Sequence[ColumnElement[bool]] = (),
) -> int:
    """Append one event in the current transaction; returns its sequence number. Raises
    ``TaskGone`` when the task does not exist or ``conditions`` fail."""
    seq = await _transition(session, task_id, conditions, {}, type_, payload, ordinal=ordinal)
    if seq is None:
        raise TaskGone(task_id)
    return seq


async def load(sessions: async_sessionmaker[AsyncSession], task_id: str) -> Task | None:
    async with sessions() as session:
        return await session.get(Task, task_id)


# -- submit ---------------------------------------------------------------------------------
async def by_idempotency_key(session: AsyncSession, tenant: str, key: str) -> Task | None:
    stmt = (
        select(Task)
        .where(Task.tenant == tenant, Task.idempotency_key == key)
        .execution_options(populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def active_count(session: AsyncSession, tenant: str) -> int:
    """The tenant's queued and running tasks."""
    count = await session.scalar(select(func.count()).select_from(Task).where(
        Task.tenant == tenant, Task.status.in_(("queued", "running"))))
    return int(count or 0)


async def submitted_since(
    session: AsyncSession, tenant: str, since: datetime, limit: int
) -> list[datetime]:
    """Creation times of the tenant's tasks created after ``since``, oldest first, at most
    ``limit``."""
    rows = await session.execute(
        select(Task.created_at).where(Task.tenant == tenant, Task.created_at > since)
        .order_by(Task.created_at).limit(limit))
    return list(rows.scalars().all())


#: hex digits of a new task's id: 88 random bits (a collision among 10^8 tasks: about 1 in
#: 10^10). The id is in every row and index entry of a task's nodes, steps, calls and events;
#: 22 digits rather than a UUID's 32 save about 100 B per LLM call. Ids of other lengths (the
#: 32 digits of tasks submitted before 0.3) stay valid.
ID_DIGITS = 22


def new_id() -> str:
    """A new task's id: ``ID_DIGITS`` random hex digits."""
    return secrets.token_hex(ID_DIGITS // 2)


async def insert(session: AsyncSession, task_id: str, *, rows: Sequence[object] = (),
                 **fields: Any) -> Task | None:
    """Insert a queued task (``fields``: what was submitted) and commit; None (rolled back)
    when its idempotency key is taken, e.g. by a concurrent request that won the insert.
    ``rows`` (e.g. the task's webhook endpoint) are inserted in the same transaction."""
    now = utcnow()
    task = Task(
        id=task_id, status="queued", llm_calls=0, prompt_tokens=0, completion_tokens=0,
        cost_usd=0.0, nodes_count=0, max_depth=0, cancel_requested=False, attempt=0,
        last_seq=0, created_at=now, updated_at=now, **fields)
    session.add(task)
    session.add_all(rows)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        if task.idempotency_key is None:
            raise
        return None
    return task


# -- cancel, resume -------------------------------------------------------------------------
async def cancel(session: AsyncSession, task: Task, *, also: Also | None = None) -> bool:
    """Request cancellation of ``task`` and commit (idempotent); the row is refreshed. True
    when a queued or waiting task was cancelled outright (status ``cancelled``, a
    ``task.finished`` event), in one statement conditional on that status, so it cannot race a
    worker's claim; a running task gets ``cancel_requested`` and stops at its next LLM call.
    A finished task is left as it is."""
    if task.status in FINAL_STATUSES:
        return False
    now = utcnow()
    waiting = task.status == "waiting"
    error = CANCELLED_WHILE_WAITING if waiting else CANCELLED_BEFORE_START
    seq = await _transition(
        session, task.id, (Task.status.in_(("queued", "waiting")),),
        dict(status="cancelled", cancel_requested=True, finished_at=now, updated_at=now,
             error=error),
        "task.finished", FinishedData(status="cancelled", error=error))
    if seq is not None:  # a node that waited for a decision will not get one
        await session.execute(
            update(NodeRow).where(NodeRow.task_id == task.id,
                                  NodeRow.status == "awaiting_approval")
            .values(status="cancelled", error=error, updated_at=now))
    if seq is not None and also is not None:
        await also(session)
    if seq is None:
        await session.execute(
            update(Task)
            .where(Task.id == task.id, Task.status.not_in(FINAL_STATUSES),
                   Task.cancel_requested.is_(False))
            .values(cancel_requested=True, updated_at=now)
        )
    await session.commit()
    await session.refresh(task)
    return seq is not None


async def requeue(session: AsyncSession, task: Task) -> bool:
    """Queue again a task an interruption stopped (status ``error`` without a result) and
    commit, with a ``task.resumed`` event; the nodes the interruption closed run again. The
    row is refreshed. False when the task is not in that state (e.g. resumed concurrently)."""
    now = utcnow()
    error = task.error
    # its figures leave the /metrics running totals before its rows change again
    await metrics.unfold(session, Task.id == task.id)
    seq = await _transition(
        session, task.id, (Task.status == "error", Task.result.is_(None)),
        dict(status="queued", error=None, finished_at=None, cancel_requested=False,
             lease_owner=None, lease_expires_at=None, updated_at=now),
        "task.resumed", ResumedData(after=error))
    if seq is None:
        await session.rollback()
        await session.refresh(task)
        return False
    # the replay's own node updates are not written again: reopen what the interruption closed
    await session.execute(
        update(NodeRow)
        .where(NodeRow.task_id == task.id, NodeRow.status == "failed", NodeRow.error == error)
        .values(status="running", error=None, updated_at=now)
    )
    await session.commit()
    await session.refresh(task)
    return True


# -- waiting for a person -------------------------------------------------------------------
async def touch(session: AsyncSession, task_id: str) -> None:
    """Take the task row's lock for the rest of the caller's transaction (a write that
    changes nothing but ``updated_at``)."""
    await session.execute(update(Task).where(Task.id == task_id).values(updated_at=utcnow()))


async def wait(session: AsyncSession, task_id: str, attempt: int, owner: str,
               requested: Sequence[ApprovalRequestedData]) -> bool:
    """Let the task wait for decisions, in the caller's transaction: status ``waiting``, the
    lease handed back (no worker holds it), an ``approval.requested`` event for each of
    ``requested``; only if ``attempt`` of ``owner`` still holds the lease (False otherwise).
    The task's ``resolved_goal``, written when a task finishes, is the root node's goal from
    now on, so a waiting task says what it is doing (a goal the environment chose too)."""
    now = utcnow()
    root_goal = (select(NodeRow.goal).where(NodeRow.task_id == task_id,
                                            NodeRow.parent_id.is_(None))
                 .order_by(NodeRow.id).limit(1).scalar_subquery())
    seq = await _transition(
        session, task_id, (Task.status == "running", *_holds(attempt, owner)),
        dict(status="waiting", lease_owner=None, lease_expires_at=None, updated_at=now,
             resolved_goal=func.coalesce(Task.resolved_goal, root_goal)),
        "approval.requested", requested[0])
    if seq is None:
        return False
    for more in requested[1:]:
        await append_event(session, task_id, "approval.requested", more)
    return True


async def wake(session: AsyncSession, task_id: str, *, running: str | None = None) -> bool:
    """Queue a waiting task again once it may go on (its decisions are made), with a
    ``task.resumed`` event, in the caller's transaction. ``running``: the owner of a running
    attempt that must hand its lease back instead (it met a request decided meanwhile). False
    when the task is not in that state."""
    now = utcnow()
    conditions = ((Task.status == "waiting",) if running is None else
                  (Task.status == "running", Task.lease_owner == running))
    seq = await _transition(
        session, task_id, conditions,
        dict(status="queued", lease_owner=None, lease_expires_at=None, updated_at=now),
        "task.resumed", ResumedData(after="approval"))
    return seq is not None


async def fail_waiting(session: AsyncSession, task_id: str, message: str) -> bool:
    """End a waiting task ``failed`` (no decision came before its deadline), in the caller's
    transaction, with a ``task.finished`` event; the node that waited fails too. False when the
    task no longer waits."""
    now = utcnow()
    seq = await _transition(
        session, task_id, (Task.status == "waiting",),
        dict(status="failed", success=False, error=message, finished_at=now, updated_at=now),
        "task.finished", FinishedData(status="failed", error=message))
    if seq is None:
        return False
    await session.execute(
        update(NodeRow).where(NodeRow.task_id == task_id, NodeRow.status == "awaiting_approval")
        .values(status="failed", success=False, error=message, updated_at=now))
    return True


# -- the lease: claim, reclaim, renew, finish -----------------------------------------------
def _holds(attempt: int, owner: str) -> tuple[ColumnElement[bool], ...]:
    return (Task.attempt == attempt, Task.lease_owner == owner)


async def claim(
    sessions: async_sessionmaker[AsyncSession], task_id: str, owner: str, lease_seconds: float
) -> int | None:
    """Take the lease of a queued task, or of a running one whose lease expired; returns the
    new attempt number, None when the task is not claimable."""
    now = utcnow()
    t = TASK_TABLE.c  # the table, not the ORM entity (see TASK_TABLE)
    stmt = (
        update(TASK_TABLE)
        .where(
            t.id == task_id,
            or_(t.status == "queued", (t.status == "running") & (t.lease_expires_at < now)),
        )
        .values(
            status="running", attempt=t.attempt + 1, lease_owner=owner, worker=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds), heartbeat_at=now,
            started_at=func.coalesce(t.started_at, now), updated_at=now,
        )
        .returning(t.attempt)
    )
    async with sessions.begin() as session:
        attempt = (await session.execute(stmt)).scalar_one_or_none()
    return None if attempt is None else int(attempt)


async def reclaim(
    sessions: async_sessionmaker[AsyncSession], task_id: str, attempt: int, owner: str,
    lease_seconds: float,
) -> int | None:
    """Start a new attempt of a task ``owner`` still holds as ``attempt``; None when another
    worker took it over meanwhile."""
    now = utcnow()
    stmt = (
        update(Task)
        .where(Task.id == task_id, Task.status == "running", *_holds(attempt, owner))
        .values(attempt=Task.attempt + 1, heartbeat_at=now, updated_at=now,
                lease_expires_at=now + timedelta(seconds=lease_seconds))
        .returning(Task.attempt)
    )
    async with sessions.begin() as session:
        new = (await session.execute(stmt)).scalar_one_or_none()
    return None if new is None else int(new)


async def renew_leases(
    sessions: async_sessionmaker[AsyncSession], owner: str, lease_seconds: float
) -> dict[str, int]:
    """Extend every lease ``owner`` holds; returns task id -> the attempt it holds. The rows
    are locked in id order, as a group write of the same tasks locks them
    (``adapt.store.batch_group``), so the two never wait on each other in a cycle."""
    now = utcnow()
    held = (Task.lease_owner == owner, Task.status == "running")
    in_order = select(Task.id).where(*held).order_by(Task.id).with_for_update()
    stmt = (
        update(Task)
        .where(Task.id.in_(in_order.scalar_subquery()), *held)
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds), heartbeat_at=now)
        .returning(Task.id, Task.attempt)
    )
    async with sessions.begin() as session:
        rows = (await session.execute(stmt)).all()
    return {str(r[0]): int(r[1]) for r in rows}


async def ended_by(sessions: async_sessionmaker[AsyncSession], owner: str,
                   task_ids: Collection[str]) -> set[str]:
    """Those of ``task_ids`` that ``owner``'s attempt has just ended (a final status, written
    by ``owner``, whose final write gave the lease up: ``worker`` keeps who ran it): a renewal
    no longer finds them, yet nobody took them over."""
    async with sessions() as session:
        rows = await session.execute(select(Task.id).where(
            Task.id.in_(list(task_ids)), Task.worker == owner,
            Task.status.in_(FINAL_STATUSES)))
        return {str(r[0]) for r in rows}


async def finish_with_error(
    sessions: async_sessionmaker[AsyncSession], task_id: str, attempt: int, owner: str,
    message: str, *, also: Also | None = None,
) -> bool:
    """End the task ``error`` outside the engine's event stream (no ``result``, so it can be
    resumed), if ``attempt`` of ``owner`` still holds the lease; nodes left running are
    closed. False when the lease was lost."""
    now = utcnow()
    async with sessions.begin() as session:
        seq = await _transition(
            session, task_id, _holds(attempt, owner),
            dict(status="error", error=message, finished_at=now, updated_at=now,
                 lease_owner=None, lease_expires_at=None),
            "task.finished", FinishedData(status="error", error=message))
        if seq is None:
            return False
        await session.execute(
            update(NodeRow).where(NodeRow.task_id == task_id, NodeRow.status == "running")
            .values(status="failed", error=message, updated_at=now)
        )
        if also is not None:
            await also(session)
    return True


async def replay_material(
    sessions: async_sessionmaker[AsyncSession], task_id: str, *, calls_of: str | None = None,
    at_most: int | None = None,
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """What a resumed attempt replays: the recorded calls' (fingerprint, whole response), in
    order, and how many engine events are stored already. ``calls_of``: the calls of that
    task instead (a fork's origin), the first ``at_most`` of them."""
    async with sessions() as session:
        return await replay_material_in(session, task_id, calls_of=calls_of, at_most=at_most)


async def replay_material_in(
    session: AsyncSession, task_id: str, *, calls_of: str | None = None,
    at_most: int | None = None,
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """:func:`replay_material` in ``session`` (with the other reads of an attempt's start)."""
    c = LLMCallRow
    stmt = select(c.request_fingerprint, c.response, c.completion, c.prompt_tokens,
                  c.completion_tokens, c.usage_estimated, c.latency_s, c.model, c.simulated,
                  c.retries).where(c.task_id == (calls_of or task_id))
    if at_most is not None:
        stmt = stmt.where(c.id <= at_most)
    calls = (await session.execute(stmt.order_by(c.id))).all()
    events = (await session.execute(
        select(func.coalesce(func.sum(EventRow.span), 0))  # a row may hold several
        .where(EventRow.task_id == task_id, EventRow.ordinal.is_not(None))
    )).scalar_one()
    return [(str(r[0]), full_response(dict(r[1] or {}), dict(r._mapping))) for r in calls], \
        int(events)


# -- the sweeper ----------------------------------------------------------------------------
def _due(now: datetime, queued_grace: float, queued: bool) -> ColumnElement[bool]:
    cutoff = now - timedelta(seconds=queued_grace)
    expired = (Task.status == "running") & (Task.lease_expires_at < now) & or_(
        # not re-dispatched since the lease ran out (claim, heartbeats and every write of a
        # live attempt happen before its lease expires), or re-dispatched long enough ago
        Task.updated_at <= Task.lease_expires_at,
        Task.updated_at < cutoff,
    )
    if not queued:
        return expired
    stale = (Task.status == "queued") & (Task.updated_at < cutoff)
    return or_(expired, stale)


async def mark_due(
    sessions: async_sessionmaker[AsyncSession], now: datetime, *, queued_grace: float,
    queued: bool = True, limit: int = SWEEP_LIMIT,
) -> list[str]:
    """Ids of running tasks whose lease expired before ``now`` and (unless ``queued`` is
    false) of queued tasks untouched for ``queued_grace`` seconds, oldest first, at most
    ``limit``; marks them (``updated_at = now``) so that concurrent sweepers do not hand out
    the same task again within ``queued_grace``. The rows are locked in id order, as a group
    write or a lease renewal locks them: a live attempt's write may land on a row whose lease
    has just expired, and rows locked oldest first could wait on it in a cycle."""
    due = _due(now, queued_grace, queued)
    candidates = select(Task.id).where(due).order_by(Task.created_at).limit(limit)
    in_order = (select(Task.id).where(Task.id.in_(candidates.scalar_subquery()), due)
                .order_by(Task.id).with_for_update())
    stmt = (
        # ``due`` is repeated outside the subqueries so that PostgreSQL re-checks it on rows
        # another sweeper updated concurrently (READ COMMITTED re-evaluates the outer WHERE)
        update(Task)
        .where(Task.id.in_(in_order.scalar_subquery()), due)
        .values(updated_at=now)
        .returning(Task.id, Task.created_at)
        .execution_options(synchronize_session=False)
    )
    async with sessions.begin() as session:
        rows = (await session.execute(stmt)).all()
    return [str(r[0]) for r in sorted(rows, key=lambda r: r[1])]


async def release_leases(
    sessions: async_sessionmaker[AsyncSession], owner: str, task_ids: Collection[str]
) -> list[str]:
    """Expire, now, the leases ``owner`` holds on ``task_ids``, so any worker may resume them
    at once; returns the ids whose lease was released. The lease keeps no owner: a heartbeat
    of the old holder that lands after the release (its renewal may already be under way)
    must not extend it again, or the task waits a whole lease before anyone resumes it."""
    if not task_ids:
        return []
    now = utcnow()
    held = (Task.id.in_(list(task_ids)), Task.status == "running", Task.lease_owner == owner)
    in_order = select(Task.id).where(*held).order_by(Task.id).with_for_update()  # as above
    stmt = (
        update(Task)
        .where(Task.id.in_(in_order.scalar_subquery()), *held)
        # updated_at == lease_expires_at: due for the next sweep (see ``_due``)
        .values(lease_owner=None, lease_expires_at=now, updated_at=now)
        .returning(Task.id)
        .execution_options(synchronize_session=False)
    )
    async with sessions.begin() as session:
        return [str(i) for i in (await session.execute(stmt)).scalars()]


async def leases_on_host(
    sessions: async_sessionmaker[AsyncSession], host: str
) -> list[tuple[str, str]]:
    """(task id, lease owner) of the running tasks leased by processes of ``host``."""
    async with sessions() as session:
        rows = (await session.execute(
            select(Task.id, Task.lease_owner).where(
                Task.status == "running", Task.lease_owner.like(f"{host}:%"))
        )).all()
    return [(str(r[0]), str(r[1])) for r in rows if r[1]]


# -- deletion -------------------------------------------------------------------------------
async def delete_finished(session: AsyncSession, task_ids: Sequence[str], *,
                          tenant: str | None = None) -> list[str]:
    """Delete, in the caller's transaction, those of ``task_ids`` (of ``tenant``, if given)
    that are finished; returns their ids. One statement conditional on a final status, so it
    cannot race a claim or a resume; the database's cascades delete their nodes, steps, calls,
    events, webhook deliveries and own webhook endpoints (their prompt blocks:
    ``adapt.store.prompts.collect_blocks``)."""
    if not task_ids:
        return []
    chosen = Task.id.in_(list(task_ids)) & Task.status.in_(FINAL_STATUSES)
    if tenant is not None:
        chosen = chosen & (Task.tenant == tenant)
    # deleted tasks leave the /metrics running totals as they leave the rows
    await metrics.unfold(session, chosen)
    rows = await session.execute(delete(Task).where(chosen).returning(Task.id)
                                 .execution_options(synchronize_session=False))
    return [str(i) for i in rows.scalars()]


async def finished_before(session: AsyncSession, cutoff: datetime | None, *,
                          tenant: str | None = None, limit: int) -> list[str]:
    """Ids of at most ``limit`` finished tasks (of ``tenant``, if given) that finished before
    ``cutoff`` (None: whenever), the oldest first."""
    stmt = select(Task.id).where(Task.status.in_(FINAL_STATUSES))
    if cutoff is not None:
        stmt = stmt.where(Task.finished_at < cutoff)
    if tenant is not None:
        stmt = stmt.where(Task.tenant == tenant)
    rows = await session.execute(stmt.order_by(Task.finished_at, Task.id).limit(limit))
    return [str(i) for i in rows.scalars()]
