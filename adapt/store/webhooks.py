"""Every write on the webhook tables: endpoints (a tenant's, or one task's ``webhook``),
deliveries recorded once per (event, endpoint), claimed by one sender at a time, and their
attempts."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Integer, and_, cast, exists, func, insert, literal, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.tree import FINAL_NODE_STATUSES
from adapt.store.models import (
    FINAL_STATUSES,
    NodeRow,
    Task,
    WebhookDelivery,
    WebhookEndpoint,
    utcnow,
)
from adapt.webhooks.signing import new_secret

#: attempts kept in a delivery's log (the newest; ``attempts`` counts them all)
LOG_LIMIT = 20


@dataclass(frozen=True)
class Target:
    """An endpoint as the sink needs it."""

    id: str
    events: tuple[str, ...]


def new_endpoint(tenant: str, url: str, events: Sequence[str], *, task_id: str | None = None,
                 description: str | None = None) -> WebhookEndpoint:
    """A new endpoint row with a fresh secret (the caller adds it to a session)."""
    return WebhookEndpoint(id=uuid.uuid4().hex, tenant=tenant, task_id=task_id, url=url,
                           events=list(dict.fromkeys(events)), secret=new_secret(),
                           description=description, created_at=utcnow())


async def list_endpoints(session: AsyncSession, tenant: str) -> Sequence[WebhookEndpoint]:
    return (await session.execute(
        select(WebhookEndpoint).where(WebhookEndpoint.tenant == tenant,
                                      WebhookEndpoint.task_id.is_(None),
                                      WebhookEndpoint.disabled_at.is_(None))
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id))).scalars().all()


async def add_endpoint(session: AsyncSession, row: WebhookEndpoint, *, limit: int) -> bool:
    """Insert ``row`` (a tenant endpoint) unless its tenant already has ``limit`` endpoints;
    False then. One conditional INSERT, which SQLite runs under its write lock; on PostgreSQL
    after a transaction lock on the tenant (two concurrent READ COMMITTED inserts would each
    count without the other). The caller commits."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_advisory_xact_lock(
            func.hashtext("adapt.webhook_endpoints:" + row.tenant))))
    existing = (select(func.count()).select_from(WebhookEndpoint).where(
        WebhookEndpoint.tenant == row.tenant, WebhookEndpoint.task_id.is_(None),
        WebhookEndpoint.disabled_at.is_(None)).scalar_subquery())
    columns = [c for c in WebhookEndpoint.__table__.columns if getattr(row, c.key) is not None]
    values = select(*(literal(getattr(row, c.key), type_=c.type) for c in columns)).where(
        existing < limit)
    result = await session.execute(
        insert(WebhookEndpoint).from_select([c.key for c in columns], values))
    return int(getattr(result, "rowcount", 0) or 0) == 1


async def get_endpoint(session: AsyncSession, tenant: str, endpoint_id: str
                       ) -> WebhookEndpoint | None:
    row = await session.get(WebhookEndpoint, endpoint_id)
    if row is None or row.tenant != tenant or row.task_id is not None \
            or row.disabled_at is not None:
        return None
    return row


async def disable_endpoint(session: AsyncSession, row: WebhookEndpoint) -> None:
    """Stop sending to ``row`` (its delivery log stays); pending deliveries are dropped."""
    now = utcnow()
    row.disabled_at = now
    await session.execute(
        update(WebhookDelivery).where(WebhookDelivery.endpoint_id == row.id,
                                      WebhookDelivery.status == "pending")
        .values(status="failed", last_error="endpoint deleted", locked_until=None))
    await session.commit()


async def targets_in(session: AsyncSession, task_id: str, tenant: str) -> list[Target]:
    """The endpoints that receive ``task_id``'s events: its own ``webhook`` and its tenant's."""
    rows = (await session.execute(
        select(WebhookEndpoint.id, WebhookEndpoint.events).where(
            WebhookEndpoint.tenant == tenant, WebhookEndpoint.disabled_at.is_(None),
            or_(WebhookEndpoint.task_id.is_(None), WebhookEndpoint.task_id == task_id))
    )).all()
    return [Target(str(r[0]), tuple(r[1] or ())) for r in rows]


async def targets(sessions: async_sessionmaker[AsyncSession], task_id: str, tenant: str
                  ) -> list[Target]:
    async with sessions() as session:
        return await targets_in(session, task_id, tenant)


def delivery_id(task_id: str, event_key: str, endpoint_id: str) -> str:
    """The Standard Webhooks message id of one event for one endpoint (deterministic)."""
    digest = hashlib.sha256(f"{task_id}|{event_key}|{endpoint_id}".encode()).hexdigest()
    return "msg_" + digest[:40]


def _insert_ignoring_duplicates(session: AsyncSession) -> Any:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(WebhookDelivery).on_conflict_do_nothing(index_elements=["id"])
    return sqlite.insert(WebhookDelivery).on_conflict_do_nothing(index_elements=["id"])


#: the error of the ``node.finished`` deliveries that reached a task's limit (see :func:`record`)
LIMIT_REACHED = ("not sent: the task reached its limit of node.finished deliveries "
                 "(ADAPT_WEBHOOK_MAX_DELIVERIES_PER_TASK = {limit}); later node.finished events "
                 "of this task are not recorded; task.finished is always sent")


async def _node_deliveries(session: AsyncSession, task_id: str) -> int:
    return int((await session.execute(
        select(func.count()).select_from(WebhookDelivery).where(
            WebhookDelivery.task_id == task_id,
            WebhookDelivery.event_type == "node.finished"))).scalar_one())


async def record(session: AsyncSession, task_id: str, event_type: str, event_key: str,
                 data: dict[str, Any], endpoints: Sequence[Target], *,
                 max_node_deliveries: int | None = None) -> int:
    """Record one event for each endpoint subscribed to its type, in the caller's transaction;
    an event already recorded (same key) is left alone. Returns the rows added.

    ``max_node_deliveries``: at most this many ``node.finished`` rows per task (all endpoints
    together). The first event that would pass it is recorded once per endpoint as ``failed``
    with :data:`LIMIT_REACHED` (never sent: the delivery log says why the rest are missing);
    later ones are not recorded at all. ``task.finished`` is never limited."""
    now = utcnow()
    rows = []
    for t in endpoints:
        if event_type not in t.events:
            continue
        msg_id = delivery_id(task_id, event_key, t.id)
        payload = {"type": event_type, "timestamp": now.isoformat().replace("+00:00", "Z"),
                   "data": data}
        rows.append({"id": msg_id, "task_id": task_id, "endpoint_id": t.id,
                     "event_type": event_type, "event_key": event_key, "payload": payload,
                     "status": "pending", "attempts": 0, "next_attempt_at": now, "log": [],
                     "created_at": now})
    if not rows:
        return 0
    if event_type == "node.finished" and max_node_deliveries is not None:
        recorded = await _node_deliveries(session, task_id)
        if recorded > max_node_deliveries:
            return 0  # past the limit, and the rows that say so are there
        if recorded + len(rows) > max_node_deliveries:
            error = LIMIT_REACHED.format(limit=max_node_deliveries)
            for row in rows:
                row.update(status="failed", last_error=error)
    result = await session.execute(_insert_ignoring_duplicates(session), rows)
    return int(getattr(result, "rowcount", 0) or 0)


def finished_data(task_id: str, status: str, result: dict[str, Any] | None,
                  error: str | None) -> dict[str, Any]:
    """The ``data`` of a ``task.finished`` event."""
    data: dict[str, Any] = {"task_id": task_id, "status": status, "error": error,
                            "url": f"/tasks/{task_id}"}
    if result:
        for key in ("success", "reward", "claimed_success", "verdict", "nodes", "max_depth",
                    "usage", "wall_seconds", "budget_exceeded"):
            data[key] = result.get(key)
    return data


async def record_end(session: AsyncSession, task_id: str, key: str, status: str,
                     error: str | None) -> None:
    """A ``task.finished`` the engine did not emit (an error outside the run, a cancel while
    queued), in the caller's transaction; ``key`` identifies it (``error:3``: attempt 3's)."""
    tenant = (await session.execute(select(Task.tenant).where(Task.id == task_id))
              ).scalar_one_or_none()
    if tenant is None:
        return
    endpoints = await targets_in(session, task_id, tenant)
    if endpoints:
        await record(session, task_id, "task.finished", key,
                     finished_data(task_id, status, None, error), endpoints)


@dataclass(frozen=True)
class Claimed:
    id: str
    url: str
    secret: str
    body: dict[str, Any]
    attempts: int
    created_at: datetime
    #: the task's tenant (the sender shares its slots among tenants)
    tenant: str = ""


async def claim_due(sessions: async_sessionmaker[AsyncSession], owner: str, *, limit: int,
                    hold_seconds: float, per_tenant: int | None = None,
                    busy: Mapping[str, int] | None = None) -> list[Claimed]:
    """Take up to ``limit`` deliveries that are due and held by no one (a ``task.finished``
    is due only once its task's final state is stored; a ``node.finished`` once its node's
    final state is, or the task is over: the sink records it as the engine emits it, before the
    database sink has written the node, and a receiver that calls back must see it ended).

    Tenants take turns, and so do a tenant's endpoints: each tenant's first candidate comes
    before any tenant's second, and a tenant's candidates go round its endpoints (each
    endpoint's earliest due first), so neither a tenant's backlog nor one endpoint's holds back
    the others. ``per_tenant``: at most this many in flight per tenant, counting ``busy`` (the
    caller's deliveries still being sent, by tenant)."""
    now = utcnow()
    busy = busy or {}
    node_stored = exists().where(
        NodeRow.task_id == WebhookDelivery.task_id,
        # event_key is "node:{id}"
        NodeRow.id == cast(func.substr(WebhookDelivery.event_key, len("node:") + 1), Integer),
        NodeRow.status.in_(sorted(FINAL_NODE_STATUSES)))
    # each endpoint's due deliveries in order, then each tenant's: its endpoints in turn
    endpoint_turn = func.row_number().over(
        partition_by=WebhookDelivery.endpoint_id,
        order_by=(WebhookDelivery.next_attempt_at, WebhookDelivery.id))
    due = (
        select(WebhookDelivery.id.label("id"), Task.tenant.label("tenant"),
               WebhookDelivery.next_attempt_at.label("due_at"),
               endpoint_turn.label("endpoint_turn"))
        .join(Task, Task.id == WebhookDelivery.task_id)
        .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now,
               or_(WebhookDelivery.locked_until.is_(None), WebhookDelivery.locked_until < now),
               or_(WebhookDelivery.event_type != "task.finished",
                   Task.status.in_(FINAL_STATUSES)),
               or_(WebhookDelivery.event_type != "node.finished",
                   Task.status.in_(FINAL_STATUSES), node_stored)))
    room: dict[str, int] = {}
    if per_tenant is not None:
        full = sorted(t for t, n in busy.items() if n >= per_tenant)
        if full:
            due = due.where(Task.tenant.not_in(full))
    by_endpoint = due.subquery()
    tenant_turn = func.row_number().over(
        partition_by=by_endpoint.c.tenant,
        order_by=(by_endpoint.c.endpoint_turn, by_endpoint.c.due_at, by_endpoint.c.id))
    ranked = select(by_endpoint.c.id, by_endpoint.c.tenant, by_endpoint.c.due_at,
                    tenant_turn.label("turn")).subquery()
    query = select(ranked.c.id, ranked.c.tenant).order_by(ranked.c.turn, ranked.c.due_at,
                                                          ranked.c.id)
    if per_tenant is not None:
        query = query.where(ranked.c.turn <= per_tenant).limit(limit * per_tenant)
    else:
        query = query.limit(limit)
    async with sessions.begin() as session:
        candidates = (await session.execute(query)).all()
        claimed: list[Claimed] = []
        for msg_id, tenant in candidates:
            if len(claimed) >= limit:
                break
            if per_tenant is not None:
                left = room.setdefault(tenant, per_tenant - busy.get(tenant, 0))
                if left <= 0:
                    continue
            row = (await session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == msg_id, WebhookDelivery.status == "pending",
                       or_(WebhookDelivery.locked_until.is_(None),
                           WebhookDelivery.locked_until < now))
                .values(locked_until=now + timedelta(seconds=hold_seconds), locked_by=owner)
                .returning(WebhookDelivery.endpoint_id, WebhookDelivery.payload,
                           WebhookDelivery.attempts, WebhookDelivery.created_at)
            )).one_or_none()
            if row is None:
                continue
            endpoint = await session.get(WebhookEndpoint, row[0])
            if endpoint is None:
                continue
            if per_tenant is not None:
                room[tenant] -= 1
            claimed.append(Claimed(msg_id, endpoint.url, endpoint.secret, dict(row[1]),
                                   int(row[2]), row[3], str(tenant)))
    return claimed


async def record_attempt(sessions: async_sessionmaker[AsyncSession], msg_id: str, owner: str,
                         *, ok: bool, status_code: int | None, error: str | None,
                         duration_ms: int, retry_at: datetime | None) -> None:
    """Log one attempt: delivered (``ok``), retried at ``retry_at``, or given up (None)."""
    now = utcnow()
    async with sessions.begin() as session:
        row = await session.get(WebhookDelivery, msg_id, with_for_update=True)
        if row is None or row.locked_by != owner or row.status != "pending":
            return
        entry = {"at": now.isoformat(), "status_code": status_code, "error": error,
                 "duration_ms": duration_ms}
        row.log = [*(row.log or []), entry][-LOG_LIMIT:]
        row.attempts += 1
        row.last_status_code = status_code
        row.last_error = error
        row.locked_until = None
        row.locked_by = None
        if ok:
            row.status, row.delivered_at = "delivered", now
        elif retry_at is None:
            row.status = "failed"
        else:
            row.next_attempt_at = retry_at


async def for_task(session: AsyncSession, task_id: str, *, limit: int | None = None,
                   after: tuple[datetime, str] | None = None) -> Sequence[WebhookDelivery]:
    """The task's deliveries, oldest first; ``limit`` of them after the (created_at, id) pair
    ``after`` (a page of the delivery log)."""
    stmt = select(WebhookDelivery).where(WebhookDelivery.task_id == task_id)
    if after is not None:
        created_at, msg_id = after
        stmt = stmt.where(or_(WebhookDelivery.created_at > created_at,
                              and_(WebhookDelivery.created_at == created_at,
                                   WebhookDelivery.id > msg_id)))
    stmt = stmt.order_by(WebhookDelivery.created_at, WebhookDelivery.id)
    if limit is not None:
        stmt = stmt.limit(limit)
    return (await session.execute(stmt)).scalars().all()


async def endpoints_by_id(session: AsyncSession, ids: set[str]
                          ) -> Sequence[WebhookEndpoint]:
    if not ids:
        return []
    return (await session.execute(
        select(WebhookEndpoint).where(WebhookEndpoint.id.in_(ids)))).scalars().all()


async def endpoints_of_task(session: AsyncSession, task_id: str
                            ) -> Sequence[WebhookEndpoint]:
    return (await session.execute(
        select(WebhookEndpoint).where(WebhookEndpoint.task_id == task_id))).scalars().all()


__all__ = ["LIMIT_REACHED", "Claimed", "Target", "add_endpoint", "claim_due", "delivery_id",
           "disable_endpoint",
           "finished_data", "for_task", "get_endpoint", "list_endpoints", "new_endpoint", "record",
           "record_attempt", "record_end", "targets", "targets_in"]
