"""Webhooks at run time: ``WebhookSink`` records a delivery per subscribed endpoint when a
node or the task finishes, and ``WebhookSender`` (one per worker process) sends the due ones.

The sink writes in its own transaction, ahead of the database sink, and identifies each event
by where it is in the engine's stream (``task.finished``: its ordinal; ``node.finished``: the
node id). A resumed attempt replays the stream, so an event recorded before a crash maps to the
row already there and one lost in the crash is recorded now: once per event, whatever happens.
A ``task.finished`` delivery waits until the task's final state is stored, a ``node.finished``
one until the node's is (``adapt.store.webhooks.claim_due``).

Sending never touches the task: it runs on the worker's loop beside the tasks, with one
deadline per attempt, and retries with exponential backoff until ``webhook_retry_seconds``
after the event. The same message id (``webhook-id``) is sent on every retry, so a receiver
that saw a delivery whose answer was lost can tell.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import Event, NodeUpdated, TaskFinished, TreeSink
from adapt.engine.tree import FINAL_NODE_STATUSES
from adapt.net.http import new_client, post_pinned
from adapt.settings import Settings
from adapt.store import webhooks as store
from adapt.store.models import utcnow
from adapt.webhooks import OutboundRefused, webhook_policy
from adapt.webhooks.signing import sign

log = logging.getLogger(__name__)

USER_AGENT = "adapt-webhooks/1"


class WebhookSink(TreeSink):
    """Records webhook deliveries for one task's run. Each is written in its own transaction
    as its event arrives, so ``flush`` has nothing to do (the default)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], task_id: str,
                 endpoints: list[store.Target], *, wake: Any = None,
                 max_node_deliveries: int | None = None) -> None:
        self.sessions = sessions
        self.task_id = task_id
        self.endpoints = endpoints
        self.wake = wake
        #: ``node.finished`` deliveries the task records at most (``adapt.store.webhooks.record``)
        self.max_node_deliveries = max_node_deliveries
        self.ordinal = 0
        self._finished_nodes: set[int] = set()
        self._events = {e for t in endpoints for e in t.events}

    async def emit(self, event: Event) -> None:
        self.ordinal += 1
        if isinstance(event, NodeUpdated) and "node.finished" in self._events:
            node = event.node
            if node.status in FINAL_NODE_STATUSES and node.id not in self._finished_nodes:
                self._finished_nodes.add(node.id)
                await self._record("node.finished", f"node:{node.id}", {
                    "task_id": self.task_id, "node": node.model_dump(
                        mode="json", exclude={"context_in", "context_out", "plan"})})
        elif isinstance(event, TaskFinished) and "task.finished" in self._events:
            r = event.result
            await self._record("task.finished", f"finished:{self.ordinal}",
                               store.finished_data(self.task_id, r.status,
                                                  r.model_dump(mode="json"), r.error))

    async def _record(self, event_type: str, key: str, data: dict[str, Any]) -> None:
        async with self.sessions.begin() as session:
            added = await store.record(session, self.task_id, event_type, key, data,
                                       self.endpoints,
                                       max_node_deliveries=self.max_node_deliveries)
        if added and self.wake is not None:
            self.wake()


#: seconds a claim outlasts the attempt's deadline: time to record the attempt's outcome
CLAIM_MARGIN_SECONDS = 30.0


class WebhookSender:
    """Sends due deliveries for one process; :meth:`run` until cancelled.

    Each attempt has one deadline, ``webhook_timeout_seconds`` from its claim (resolving the
    name, connecting, sending and the answer's status and headers all count), and its claim
    lasts ``claim_margin`` longer: an attempt is over before its claim can expire, so no other
    sender takes the delivery while this one may still be sending it. Of an answer only the
    status and the first bytes are read (:mod:`adapt.net.http`)."""

    def __init__(self, settings: Settings, sessions: async_sessionmaker[AsyncSession],
                 owner: str, *, claim_margin: float = CLAIM_MARGIN_SECONDS) -> None:
        self.settings = settings
        self.sessions = sessions
        self.owner = owner
        self.policy = webhook_policy(settings.webhook_allowed_networks)
        self.timeout = settings.webhook_timeout_seconds
        self.hold = self.timeout + claim_margin
        self.slots = settings.webhook_concurrency
        self.tenant_slots = min(settings.webhook_tenant_concurrency, self.slots)
        #: deliveries being sent, by tenant
        self.busy: Counter[str] = Counter()
        #: name lookups run here, not in asyncio's small default pool: a user controls their
        #: name's DNS and can make a lookup hang past the deadline (its thread stays busy)
        self._resolver = ThreadPoolExecutor(self.slots, thread_name_prefix="adapt-webhook-dns")
        self._wake = asyncio.Event()
        self._client: httpx.AsyncClient | None = None

    def wake(self) -> None:
        self._wake.set()

    def backoff(self, attempts: int) -> float:
        """Seconds before retry number ``attempts`` (1, 2, ...): doubling, at most an hour."""
        return float(min(self.settings.webhook_backoff_seconds * 2 ** (attempts - 1), 3600.0))

    async def run(self) -> None:
        """Send due deliveries until cancelled: up to ``webhook_concurrency`` at once and
        ``webhook_tenant_concurrency`` per tenant, each on its own, so receivers that hang
        until the deadline hold their own slots and leave the others to other tenants (due ones
        are claimed as soon as a slot is free)."""
        self._client = new_client(self.timeout, USER_AGENT)
        sending: set[asyncio.Task[None]] = set()
        try:
            while True:
                claimed = 0
                if len(sending) < self.slots:
                    try:
                        due = await self._claim(self.slots - len(sending))
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # the database is away: try again at the next poll
                        log.warning("webhook sender: %s", type(exc).__name__,
                                    exc_info=log.isEnabledFor(logging.DEBUG))
                        due = []
                    for d, deadline in due:
                        task = asyncio.create_task(self._send_logged(d, deadline))
                        sending.add(task)
                        task.add_done_callback(sending.discard)
                    claimed = len(due)
                if claimed and len(sending) < self.slots:
                    continue  # more may be due
                self._wake.clear()
                woken = asyncio.ensure_future(self._wake.wait())
                try:  # a finished send frees a slot (its tenant's, maybe): look again
                    await asyncio.wait({woken, *sending},
                                       timeout=self.settings.webhook_poll_seconds,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
        finally:
            for task in sending:
                task.cancel()
            await asyncio.gather(*sending, return_exceptions=True)
            await self._client.aclose()
            self._resolver.shutdown(wait=False, cancel_futures=True)

    async def _claim(self, limit: int) -> list[tuple[store.Claimed, float]]:
        """Claim up to ``limit`` due deliveries; each with its deadline (the loop's clock),
        counted from before the claim, so it comes before the claim expires."""
        deadline = asyncio.get_running_loop().time() + self.timeout
        due = await store.claim_due(self.sessions, self.owner, limit=limit,
                                    hold_seconds=self.hold, per_tenant=self.tenant_slots,
                                    busy=self.busy)
        for d in due:
            self.busy[d.tenant] += 1
        return [(d, deadline) for d in due]

    async def send_due(self, limit: int | None = None) -> int:
        """Claim up to ``limit`` due deliveries and send them (all finished on return)."""
        if self._client is None:
            async with new_client(self.timeout, USER_AGENT) as self._client:
                try:
                    return await self.send_due(limit)
                finally:
                    self._client = None
        due = await self._claim(limit or self.slots)
        if due:
            await asyncio.gather(*(self._send_logged(d, deadline) for d, deadline in due))
        return len(due)

    async def _send_logged(self, d: store.Claimed, deadline: float) -> None:
        try:
            await self._send(d, deadline)
        except Exception as exc:  # recording the attempt failed: the hold expires, it is sent again
            log.warning("webhook %s: %s", d.id, type(exc).__name__,
                        exc_info=log.isEnabledFor(logging.DEBUG))
        finally:
            self.busy[d.tenant] -= 1
            if self.busy[d.tenant] <= 0:
                del self.busy[d.tenant]

    async def _send(self, d: store.Claimed, deadline: float) -> None:
        if self._client is None:
            raise RuntimeError("the webhook sender is not running")
        body = json.dumps(d.body, separators=(",", ":"), ensure_ascii=False).encode()
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        prefix = b""
        try:
            async with asyncio.timeout_at(deadline):
                addresses = await asyncio.get_running_loop().run_in_executor(
                    self._resolver, self.policy.resolve_and_check, d.url)
            headers = {"content-type": "application/json", **sign(d.secret, d.id, body)}
            answer = await post_pinned(self._client, d.url, addresses, body, headers,
                                       deadline=deadline)
            status, prefix = answer.status_code, answer.prefix
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except OutboundRefused as exc:
            error = str(exc)
            if exc.detail:
                log.info("webhook %s to %s refused: %s", d.id, d.url, exc.detail)
        except TimeoutError:
            error = f"Timeout: no answer within {self.timeout:g} s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500] or type(exc).__name__
        ok = error is None
        retry_at = None
        if not ok:
            at = utcnow() + timedelta(seconds=self.backoff(d.attempts + 1))
            if at - d.created_at <= timedelta(seconds=self.settings.webhook_retry_seconds):
                retry_at = at
        log.log(logging.DEBUG if ok else logging.INFO, "webhook %s to %s: %s%s", d.id, d.url,
                "delivered" if ok else f"{error} ({'retry' if retry_at else 'given up'})",
                f"; answer began {prefix[:200]!r}" if prefix and not ok else "")
        await store.record_attempt(
            self.sessions, d.id, self.owner, ok=ok, status_code=status, error=error,
            duration_ms=int((time.monotonic() - started) * 1000), retry_at=retry_at)
