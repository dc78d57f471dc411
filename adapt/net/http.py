"""One request to a URL a user (or the operator) chose, bounded in time and in what is read of
the answer: :func:`post_pinned` for webhooks (a few KB of the answer, for the log),
:func:`send_pinned` for remote environments (the whole answer, up to a limit).

- The request goes to an address the policy just checked (:func:`adapt.net.policy.pinned`),
  each in turn until one accepts the connection; the name is not resolved again.
- One deadline covers the whole exchange: connecting, sending, and the answer's status line
  and headers. httpx's timeouts apply to each read on its own, so a receiver that sends a byte
  every second would hold the request for as long as it liked; the deadline cuts it.
- Of the answer's body at most ``max_answer_bytes`` are read, raw (not decompressed), for
  the log; then the connection is closed. A receiver answering gigabytes costs a few KB. The
  status line and headers are bounded by the HTTP parser (httpcore's h11 refuses more than
  100 KB of them).
- No redirect is followed (one could point anywhere), no connection is kept for reuse (the
  pool knows a connection by its address, and a TLS connection checked against one host name
  must not carry a request for another name that resolves to the same address), and no proxy
  is taken from the environment (a proxy would connect to an address of its choosing), while
  ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` still apply (the process's one SSL context,
  :func:`adapt.llm.transport.ssl_context`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

import httpx

from adapt.llm.transport import ssl_context
from adapt.net.policy import pinned

#: bytes of an answer's body read at most (kept for the server log)
ANSWER_PREFIX_BYTES = 1024


def new_client(timeout: float, user_agent: str) -> httpx.AsyncClient:
    """A client for :func:`post_pinned` (``timeout``: each network operation's; the
    exchange's deadline is :func:`post_pinned`'s)."""
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False,
                             headers={"user-agent": user_agent},
                             limits=httpx.Limits(max_keepalive_connections=0),
                             trust_env=False, verify=ssl_context())


@dataclass(frozen=True)
class Answer:
    status_code: int
    #: the body's first bytes (raw), at most ``max_answer_bytes``; cut short at the deadline
    prefix: bytes


async def _prefix(response: httpx.Response, limit: int) -> bytes:
    kept = bytearray()
    async for chunk in response.aiter_raw():  # left unfinished: closing the response ends it
        kept += chunk[:limit - len(kept)]
        if len(kept) >= limit:
            break
    return bytes(kept)


async def _exchange(client: httpx.AsyncClient, request: httpx.Request, deadline: float,
                    limit: int) -> Answer:
    async with asyncio.timeout_at(deadline):
        response = await client.send(request, stream=True)
    try:
        prefix = b""
        with contextlib.suppress(TimeoutError, httpx.HTTPError):  # the status is the answer
            async with asyncio.timeout_at(deadline):
                prefix = await _prefix(response, limit)
        return Answer(response.status_code, prefix)
    finally:
        await response.aclose()


async def post_pinned(client: httpx.AsyncClient, url: str, addresses: list[str], body: bytes,
                      headers: dict[str, str], *, deadline: float,
                      max_answer_bytes: int = ANSWER_PREFIX_BYTES) -> Answer:
    """POST ``body`` to ``url`` at one of ``addresses`` (the ones the policy checked), each in
    turn until one accepts the connection, all before ``deadline`` (the event loop's clock):
    :class:`TimeoutError` past it, ``httpx.HTTPError`` for other failures."""
    if not addresses:
        raise httpx.ConnectError(f"{url}: no address to send to")

    def request(address: str) -> httpx.Request:
        target = pinned(url, address)
        extensions = ({"sni_hostname": target.server_name} if target.server_name else None)
        return client.build_request("POST", target.url, content=body,
                                    headers={**headers, "host": target.host_header},
                                    extensions=extensions)

    for address in addresses[:-1]:
        with contextlib.suppress(httpx.ConnectError, httpx.ConnectTimeout):
            return await _exchange(client, request(address), deadline, max_answer_bytes)
    return await _exchange(client, request(addresses[-1]), deadline, max_answer_bytes)


# -- whole answers, for a client that reads them (remote environments) -----------------------


class AnswerTooLarge(httpx.HTTPError):
    """The answer's body is larger than the caller reads."""


def new_sync_client(timeout: float, user_agent: str) -> httpx.Client:
    """A blocking client for :func:`send_pinned` that keeps connections for reuse: one client
    per registered server, so a kept connection only ever carries requests for that server's
    name (to the address it was opened to, which was checked then)."""
    return httpx.Client(timeout=timeout, follow_redirects=False,
                        headers={"user-agent": user_agent, "accept-encoding": "identity"},
                        trust_env=False, verify=ssl_context())


@dataclass(frozen=True)
class Reply:
    status_code: int
    content_type: str
    body: bytes


def _read_all(client: httpx.Client, request: httpx.Request, deadline: float,
              limit: int) -> Reply:
    response = client.send(request, stream=True)
    try:
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            raise httpx.DecodingError("the answer is compressed although identity was asked")
        kept = bytearray()
        for chunk in response.iter_raw():
            kept += chunk
            if len(kept) > limit:
                raise AnswerTooLarge(f"the answer is larger than {limit} bytes")
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the answer did not arrive before the deadline")
        return Reply(response.status_code, response.headers.get("content-type", ""),
                     bytes(kept))
    finally:
        response.close()


def send_pinned(client: httpx.Client, method: str, url: str, addresses: list[str], *,
                body: bytes | None, headers: dict[str, str], deadline: float,
                max_answer_bytes: int) -> Reply:
    """Send ``method`` ``url`` to one of ``addresses`` (the ones the policy checked), each in
    turn until one accepts the connection, and read the whole answer, at most
    ``max_answer_bytes`` of it (:class:`AnswerTooLarge` past that), before ``deadline``
    (``time.monotonic()``; each network operation also waits at most the time left).
    Blocking: call it from a thread. ``httpx.ConnectError`` / ``ConnectTimeout``: nothing was
    sent; other ``httpx.HTTPError`` s: the request may have arrived."""
    if not addresses:
        raise httpx.ConnectError(f"{url}: no address to send to")

    def request(address: str) -> httpx.Request:
        target = pinned(url, address)
        extensions = ({"sni_hostname": target.server_name} if target.server_name else None)
        return client.build_request(method, target.url, content=body,
                                    headers={**headers, "host": target.host_header},
                                    timeout=max(0.001, deadline - time.monotonic()),
                                    extensions=extensions)

    for address in addresses[:-1]:
        with contextlib.suppress(httpx.ConnectError, httpx.ConnectTimeout):
            return _read_all(client, request(address), deadline, max_answer_bytes)
    return _read_all(client, request(addresses[-1]), deadline, max_answer_bytes)


__all__ = ["ANSWER_PREFIX_BYTES", "Answer", "AnswerTooLarge", "Reply", "new_client",
           "new_sync_client", "post_pinned", "send_pinned"]
