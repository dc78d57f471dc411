"""Requests to one registered environment server, through the outbound address policy.

Every request resolves the server's host and checks each address against the policy
(:meth:`adapt.net.policy.OutboundPolicy.resolve_and_check`) just before it is sent, and goes to
one of the checked addresses (:func:`adapt.net.http.send_pinned`), so a name that starts
resolving into a refused network is refused at connect time as it was at registration.

Failures are sorted by what they say about the request:

- nothing was sent (the connection was refused or timed out): retried, whatever the request;
- the request may have arrived (the answer was lost, or cut at the call's deadline) or the
  server answered 5xx/429: retried when the caller says the request may be sent twice
  (``retry="always"``: every request of adapt's protocol, whose changes carry a sequence
  number); otherwise :class:`MaybeApplied` is raised and the caller decides (an AgentGym step);
- the server answered 4xx: :class:`Refused`, with the problem's slug and a short, sanitised
  excerpt of its message.

Retries back off (0.2 s doubling to 2 s) for at most ``retry_seconds``; then
:class:`~adapt.errors.EnvironmentUnavailable` names the environment (never the server's URL or
body: those go to the log). Blocking: the engine calls environments whose steps block in a
worker thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from adapt.errors import EnvironmentUnavailable, RemoteEnvironmentError
from adapt.errors import RemoteMaybeApplied as MaybeApplied
from adapt.errors import RemoteRefused as Refused
from adapt.net.http import AnswerTooLarge, new_sync_client, send_pinned
from adapt.net.policy import OutboundPolicy, OutboundRefused

log = logging.getLogger(__name__)

USER_AGENT = "adapt-remote-env/1"
#: characters of a server's own message a task error may carry
EXCERPT_CHARS = 160


@dataclass(frozen=True)
class CallLimits:
    """How long one call may take and how long a failing one is retried."""

    #: seconds one try may take, answer included
    timeout: float = 30.0
    #: seconds a call that finds no server is retried before the task stops (resumable)
    retry_seconds: float = 30.0
    #: bytes of an answer read at most
    max_answer_bytes: int = 8 * 1024 * 1024
    first_backoff: float = 0.2
    max_backoff: float = 2.0


def excerpt(text: object, limit: int = EXCERPT_CHARS) -> str:
    """``text`` made safe to show: control characters to spaces, spaces collapsed, cut at
    ``limit`` characters."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in str(text))
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


def _problem_slug(body: Any) -> str:
    kind = body.get("type") if isinstance(body, dict) else None
    if isinstance(kind, str) and kind.startswith("urn:adapt:env-problem:"):
        return kind.rsplit(":", 1)[1]
    return ""


class Transport:
    """Requests to the server of remote environment ``name`` at ``url`` (shared by every
    instance of the environment in a process; thread-safe)."""

    def __init__(self, name: str, url: str, policy: OutboundPolicy, *,
                 token: str | None = None, limits: CallLimits | None = None) -> None:
        policy.check_url(url)
        self.name = name
        self.url = url.rstrip("/")
        self.policy = policy
        self.limits = limits or CallLimits()
        self._token = token
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = new_sync_client(self.limits.timeout, USER_AGENT)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def headers(self) -> dict[str, str]:
        out = {"accept": "application/json, application/problem+json"}
        if self._token:
            out["authorization"] = f"Bearer {self._token}"
        return out

    # -- one try ---------------------------------------------------------------------------
    def _once(self, method: str, path: str, body: bytes | None) -> tuple[int, Any]:
        url = self.url + path
        try:
            addresses = self.policy.resolve_and_check(url)
        except OutboundRefused as exc:  # nothing is sent; the task hears no address
            log.warning("remote environment %r: %s (%s)", self.name, exc, exc.detail or "-")
            raise RemoteEnvironmentError(
                f"remote environment {self.name!r}: the outbound address policy refuses its "
                "server's address now (the server log says why)") from None
        headers = self.headers()
        if body is not None:
            headers["content-type"] = "application/json"
        reply = send_pinned(self.client(), method, url, addresses, body=body, headers=headers,
                            deadline=time.monotonic() + self.limits.timeout,
                            max_answer_bytes=self.limits.max_answer_bytes)
        data: Any = None
        if reply.body:
            try:
                data = json.loads(reply.body)
            except ValueError:
                data = None
                if 200 <= reply.status_code < 300:
                    log.warning("remote environment %r: %s %s answered %d with a body that "
                                "is not JSON: %r", self.name, method, path, reply.status_code,
                                reply.body[:200])
                    raise RemoteEnvironmentError(
                        f"remote environment {self.name!r}: the server's answer to {path} is "
                        "not JSON") from None
        return reply.status_code, data

    # -- a call, with retries -----------------------------------------------------------------
    def call(self, method: str, path: str, payload: Any = None, *,
             retry: Literal["always", "unsent", "never"] = "always") -> Any:
        """The JSON answer of ``method path`` (``payload`` as its JSON body), retried as the
        module docstring says (``never``: one try, for what nobody waits for); :class:`Refused`
        for a 4xx."""
        body = None if payload is None else json.dumps(payload).encode()
        started = time.monotonic()
        delay = self.limits.first_backoff
        tries = 0
        while True:
            tries += 1
            reason: str
            try:
                status, data = self._once(method, path, body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                reason = f"connection failed ({type(exc).__name__})"
            except AnswerTooLarge:
                raise RemoteEnvironmentError(
                    f"remote environment {self.name!r}: the answer to {path} is larger than "
                    f"{self.limits.max_answer_bytes} bytes") from None
            except httpx.HTTPError as exc:  # sent, the answer lost or late
                reason = f"no answer ({type(exc).__name__})"
                if retry != "always":
                    log.warning("remote environment %r: %s %s: %s", self.name, method, path,
                                exc)
                    raise MaybeApplied(f"remote environment {self.name!r}: {reason}") from None
            else:
                if status < 400:
                    return data
                if status < 500 and status != 429:
                    raise self._refused(method, path, status, data)
                reason = f"the server answered {status}"
                log.warning("remote environment %r: %s %s answered %d: %s", self.name,
                            method, path, status, excerpt(data, 500))
                if retry != "always":
                    raise MaybeApplied(f"remote environment {self.name!r}: {reason}")
            waited = time.monotonic() - started
            if retry == "never" or waited + delay > self.limits.retry_seconds:
                log.warning("remote environment %r (%s): %s %s failed %d times over %.1f s: %s",
                            self.name, self.url, method, path, tries, waited, reason)
                raise EnvironmentUnavailable(
                    f"remote environment {self.name!r} did not answer: {reason}, {tries} "
                    f"tries over {waited:.0f} s")
            log.info("remote environment %r: %s %s: %s; retrying in %.1f s", self.name, method,
                     path, reason, delay)
            time.sleep(delay)
            delay = min(delay * 2, self.limits.max_backoff)

    def _refused(self, method: str, path: str, status: int, data: Any) -> Refused:
        slug = _problem_slug(data)
        said = data.get("detail") if isinstance(data, dict) else None
        detail = excerpt(said) if isinstance(said, str) and slug else ""
        log.warning("remote environment %r: %s %s answered %d: %s", self.name, method, path,
                    status, excerpt(data, 500))
        shown = f" ({slug}: {detail})" if slug and detail else ""
        return Refused(f"remote environment {self.name!r} refused {path.split('/')[-1] or path}"
                       f" with status {status}{shown}", status=status, slug=slug,
                       detail=detail, body=data)


__all__ = ["CallLimits", "MaybeApplied", "Refused", "Transport", "excerpt"]
