"""One request to a URL a user chose, bounded in time and in what is read of the answer.

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


__all__ = ["ANSWER_PREFIX_BYTES", "Answer", "new_client", "post_pinned"]
