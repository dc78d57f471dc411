"""Every write on the webhook tables: endpoints (a tenant's, or one task's ``webhook``),
deliveries recorded once per (event, endpoint), claimed by one sender at a time, and their
attempts."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Integer, cast, exists, func, or_, select, update
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


async def record(session: AsyncSession, task_id: str, event_type: str, event_key: str,
                 data: dict[str, Any], endpoints: Sequence[Target]) -> int:
    """Record one event for each endpoint subscribed to its type, in the caller's transaction;
    an event already recorded (same key) is left alone. Returns the rows added."""
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


async def claim_due(sessions: async_sessionmaker[AsyncSession], owner: str, *, limit: int,
                    hold_seconds: float) -> list[Claimed]:
    """Take up to ``limit`` deliveries that are due and held by no one (a ``task.finished``
    is due only once its task's final state is stored; a ``node.finished`` once its node's
    final state is, or the task is over: the sink records it as the engine emits it, before the
    database sink has written the node, and a receiver that calls back must see it ended)."""
    now = utcnow()
    node_stored = exists().where(
        NodeRow.task_id == WebhookDelivery.task_id,
        # event_key is "node:{id}"
        NodeRow.id == cast(func.substr(WebhookDelivery.event_key, len("node:") + 1), Integer),
        NodeRow.status.in_(sorted(FINAL_NODE_STATUSES)))
    async with sessions.begin() as session:
        candidates = (await session.execute(
            select(WebhookDelivery.id)
            .join(Task, Task.id == WebhookDelivery.task_id)
            .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now,
                   or_(WebhookDelivery.locked_until.is_(None),
                       WebhookDelivery.locked_until < now),
                   or_(WebhookDelivery.event_type != "task.finished",
                       Task.status.in_(FINAL_STATUSES)),
                   or_(WebhookDelivery.event_type != "node.finished",
                       Task.status.in_(FINAL_STATUSES), node_stored))
            .order_by(WebhookDelivery.next_attempt_at).limit(limit)
        )).scalars().all()
        claimed: list[Claimed] = []
        for msg_id in candidates:
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
            claimed.append(Claimed(msg_id, endpoint.url, endpoint.secret, dict(row[1]),
                                   int(row[2]), row[3]))
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


async def for_task(session: AsyncSession, task_id: str) -> Sequence[WebhookDelivery]:
    return (await session.execute(
        select(WebhookDelivery).where(WebhookDelivery.task_id == task_id)
        .order_by(WebhookDelivery.created_at, WebhookDelivery.id))).scalars().all()


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


__all__ = ["Claimed", "Target", "claim_due", "delivery_id", "disable_endpoint",
           "finished_data", "for_task", "get_endpoint", "list_endpoints", "new_endpoint", "record",
           "record_attempt", "record_end", "targets", "targets_in"]
