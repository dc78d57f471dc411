"""Pure ASGI middleware: the request body's size and time limits and the last-resort error
handler (503 with ``Retry-After`` while the database is unreachable, else 500)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adapt.service.faults import is_database_error
from api.problems import PROBLEM_JSON, problem_body

#: seconds a client is asked to wait while the database is unreachable
DATABASE_RETRY_AFTER = 5

log = logging.getLogger(__name__)


async def send_problem(send: Send, status: int, body: dict[str, Any],
                        headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = json.dumps(body).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", PROBLEM_JSON.encode()),
                    (b"content-length", str(len(payload)).encode()), *(headers or [])],
    })
    await send({"type": "http.response.body", "body": payload})


class BodyLimitMiddleware:
    """Reject bodies larger than ``max_bytes`` with 413 before anything parses them, and
    bodies that take longer than ``timeout`` seconds to arrive with 408.

    A declared ``Content-Length`` over the limit is refused at once; otherwise the body is read
    (counting, for chunked uploads) up to the limit and handed on, so the application never sees
    a partial body.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float = 30.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    def _too_large(self, path: str) -> dict[str, Any]:
        return problem_body(
            413, f"the request body exceeds the limit of {self.max_bytes} bytes "
            "(ADAPT_MAX_BODY_BYTES); send a smaller request", slug="body-too-large",
            instance=path,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await send_problem(send, 400, problem_body(
                    400, "malformed Content-Length header", instance=scope.get("path")))
                return
            if declared > self.max_bytes:
                await send_problem(send, 413, self._too_large(scope.get("path", "")),
                                   [(b"connection", b"close")])
                return
            if declared == 0:
                await self.app(scope, receive, send)
                return
        elif not chunked:
            await self.app(scope, receive, send)
            return

        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(self.timeout):
                complete = await self._read(receive, chunks)
        except TimeoutError:
            await send_problem(send, 408, problem_body(
                408, f"the request body did not arrive within {self.timeout:g} s "
                "(ADAPT_HTTP_BODY_TIMEOUT_SECONDS)", slug="body-timeout",
                instance=scope.get("path")), [(b"connection", b"close")])
            return
        if complete is None:  # the client went away
            return
        if not complete:
            await send_problem(send, 413, self._too_large(scope.get("path", "")),
                               [(b"connection", b"close")])
            return

        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, chunks: list[bytes]) -> bool | None:
        """Read the body into ``chunks``: True when whole, False past the limit, None when
        the client disconnected."""
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return False
            chunks.append(chunk)
            if not message.get("more_body", False):
                return True


class CatchAllMiddleware:
    """Answer an exception nothing else handled as problem details (no stack trace, no SQL
    leaks): 503 with ``Retry-After`` when the database is unreachable, else 500 (logged)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if is_database_error(exc):
                log.warning("database unavailable on %s %s: %s", scope.get("method"),
                            scope.get("path"), type(exc).__name__)
                if started:
                    raise
                await send_problem(send, 503, problem_body(
                    503, "the database is unavailable; retry after the time in Retry-After",
                    slug="database-unavailable", title="Service Unavailable",
                    instance=scope.get("path"),
                ), [(b"retry-after", str(DATABASE_RETRY_AFTER).encode())])
                return
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await send_problem(send, 500, problem_body(
                500, "an unexpected error occurred on the server; it has been logged. Retry "
                "later, and report it if it persists", slug="internal-error",
                instance=scope.get("path"),
            ))
