"""Webhooks at run time: ``WebhookSink`` records a delivery per subscribed endpoint when a
node or the task finishes, and ``WebhookSender`` (one per worker process) sends the due ones.

The sink writes in its own transaction, ahead of the database sink, and identifies each event
by where it is in the engine's stream (``task.finished``: its ordinal; ``node.finished``: the
node id). A resumed attempt replays the stream, so an event recorded before a crash maps to the
row already there and one lost in the crash is recorded now: once per event, whatever happens.
A ``task.finished`` delivery waits until the task's final state is stored, a ``node.finished``
one until the node's is (``adapt.store.webhooks.claim_due``).

Sending never touches the task: it runs on the worker's loop beside the tasks, with a timeout
per request, and retries with exponential backoff until ``webhook_retry_seconds`` after the
event. The same message id (``webhook-id``) is sent on every retry, so a receiver that saw a
delivery whose answer was lost can tell.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import Event, NodeUpdated, TaskFinished, TreeSink
from adapt.engine.tree import FINAL_NODE_STATUSES
from adapt.llm.transport import ssl_context
from adapt.settings import Settings
from adapt.store import webhooks as store
from adapt.store.models import utcnow
from adapt.webhooks.signing import sign
from adapt.webhooks.urls import WebhookPolicy, WebhookUrlRefused, pinned

log = logging.getLogger(__name__)

USER_AGENT = "adapt-webhooks/1"


class WebhookSink(TreeSink):
    """Records webhook deliveries for one task's run. Each is written in its own transaction
    as its event arrives, so ``flush`` has nothing to do (the default)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], task_id: str,
                 endpoints: list[store.Target], *, wake: Any = None) -> None:
        self.sessions = sessions
        self.task_id = task_id
        self.endpoints = endpoints
        self.wake = wake
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
                                       self.endpoints)
        if added and self.wake is not None:
            self.wake()


def new_client(timeout: float) -> httpx.AsyncClient:
    """The sender's client: redirects are not followed (a redirect could point anywhere); no
    connection is kept for reuse (the pool knows a connection by its address, and a TLS
    connection checked against one host name must not carry a request for another name that
    resolves to the same address); no proxy from the environment (a proxy would connect to
    an address of its choosing), while ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` still apply (the
    process's one SSL context, :func:`adapt.llm.transport.ssl_context`)."""
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False,
                             headers={"user-agent": USER_AGENT},
                             limits=httpx.Limits(max_keepalive_connections=0),
                             trust_env=False, verify=ssl_context())


async def post_pinned(client: httpx.AsyncClient, url: str, addresses: list[str], body: bytes,
                      headers: dict[str, str]) -> httpx.Response:
    """POST ``body`` to ``url`` at one of ``addresses`` (the ones the policy checked; the name
    is not resolved again): each in turn until one accepts the connection."""
    for i, address in enumerate(addresses):
        target = pinned(url, address)
        extensions = ({"sni_hostname": target.server_name} if target.server_name else None)
        try:
            return await client.post(target.url, content=body,
                                     headers={**headers, "host": target.host_header},
                                     extensions=extensions)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            if i == len(addresses) - 1:
                raise
    raise WebhookUrlRefused(f"webhook URL {url!r}: no address to send to")


#: deliveries one process sends at once
SEND_LIMIT = 20


class WebhookSender:
    """Sends due deliveries for one process; :meth:`run` until cancelled."""

    def __init__(self, settings: Settings, sessions: async_sessionmaker[AsyncSession],
                 owner: str) -> None:
        self.settings = settings
        self.sessions = sessions
        self.owner = owner
        self.policy = WebhookPolicy(tuple(settings.webhook_allowed_networks))
        self._wake = asyncio.Event()
        self._client: httpx.AsyncClient | None = None

    def wake(self) -> None:
        self._wake.set()

    def backoff(self, attempts: int) -> float:
        """Seconds before retry number ``attempts`` (1, 2, ...): doubling, at most an hour."""
        return float(min(self.settings.webhook_backoff_seconds * 2 ** (attempts - 1), 3600.0))

    async def run(self) -> None:
        """Send due deliveries until cancelled: up to ``SEND_LIMIT`` at once, each on its own,
        so a receiver that hangs until the timeout holds one slot, not the others (due ones
        are claimed as soon as a slot is free)."""
        timeout = self.settings.webhook_timeout_seconds
        self._client = new_client(timeout)
        sending: set[asyncio.Task[None]] = set()
        try:
            while True:
                claimed = 0
                if len(sending) < SEND_LIMIT:
                    try:
                        due = await self._claim(SEND_LIMIT - len(sending))
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # the database is away: try again at the next poll
                        log.warning("webhook sender: %s", type(exc).__name__,
                                    exc_info=log.isEnabledFor(logging.DEBUG))
                        due = []
                    for d in due:
                        task = asyncio.create_task(self._send_logged(d))
                        sending.add(task)
                        task.add_done_callback(sending.discard)
                    claimed = len(due)
                if claimed and len(sending) < SEND_LIMIT:
                    continue  # more may be due
                self._wake.clear()
                woken = asyncio.ensure_future(self._wake.wait())
                full = set(sending) if len(sending) >= SEND_LIMIT else set()
                try:
                    await asyncio.wait({woken, *full}, timeout=self.settings.webhook_poll_seconds,
                                       return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
        finally:
            for task in sending:
                task.cancel()
            await asyncio.gather(*sending, return_exceptions=True)
            await self._client.aclose()

    async def _claim(self, limit: int) -> list[store.Claimed]:
        hold = self.settings.webhook_timeout_seconds * 3 + 30
        return await store.claim_due(self.sessions, self.owner, limit=limit, hold_seconds=hold)

    async def send_due(self, limit: int = SEND_LIMIT) -> int:
        """Claim up to ``limit`` due deliveries and send them (all finished on return)."""
        due = await self._claim(limit)
        if due:
            await asyncio.gather(*(self._send(d) for d in due))
        return len(due)

    async def _send_logged(self, d: store.Claimed) -> None:
        try:
            await self._send(d)
        except Exception as exc:  # recording the attempt failed: the hold expires, it is sent again
            log.warning("webhook %s: %s", d.id, type(exc).__name__,
                        exc_info=log.isEnabledFor(logging.DEBUG))

    async def _send(self, d: store.Claimed) -> None:
        if self._client is None:
            raise RuntimeError("the webhook sender is not running")
        body = json.dumps(d.body, separators=(",", ":"), ensure_ascii=False).encode()
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            addresses = await asyncio.to_thread(self.policy.resolve_and_check, d.url)
            headers = {"content-type": "application/json", **sign(d.secret, d.id, body)}
            response = await post_pinned(self._client, d.url, addresses, body, headers)
            status = response.status_code
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except WebhookUrlRefused as exc:
            error = str(exc)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500] or type(exc).__name__
        ok = error is None
        retry_at = None
        if not ok:
            at = utcnow() + timedelta(seconds=self.backoff(d.attempts + 1))
            if at - d.created_at <= timedelta(seconds=self.settings.webhook_retry_seconds):
                retry_at = at
        log.log(logging.DEBUG if ok else logging.INFO, "webhook %s to %s: %s", d.id, d.url,
                "delivered" if ok else f"{error} ({'retry' if retry_at else 'given up'})")
        await store.record_attempt(
            self.sessions, d.id, self.owner, ok=ok, status_code=status, error=error,
            duration_ms=int((time.monotonic() - started) * 1000), retry_at=retry_at)
