"""The model clients' HTTP client: the ``openai`` package's aiohttp client, or httpx over
several connection pools.

:func:`model_http_client` is what every :class:`~adapt.llm.openai_compat.pool.ClientPool` opens. With
the ``openai[aiohttp]`` extra installed (a dependency of adapt) it is the package's own
``openai.DefaultAioHttpClient``: the same ``openai`` request machinery (auth, headers,
timeouts, retries, proxies from the environment) over aiohttp's connection pool, whose
request path and HTTP parser are compiled. At 200 calls in flight it costs about half the CPU
per call of httpx's pools (``python -m benchmarks.overhead --http`` measures both). Without
the extra, httpx's own transport is used, sharded as below.


httpcore's pool looks at every one of its connections (whether each is idle, expired or
readable: a socket query each) whenever a request starts or ends, so with hundreds of calls in
flight one pool spends more CPU on bookkeeping than on the requests. :class:`ShardedTransport`
hands each request to the next of ``shards`` smaller pools in turn, so each of those scans
stays short; the limits are divided among them.

Every pool verifies TLS with one SSL context per process (:func:`ssl_context`): httpx builds a
fresh one for each transport, loading the CA bundle each time (about 50-90 ms on the project's
machine), and a sharded client of 32 pools spent one to three seconds on it, on the event loop,
at a process's first model call.
"""

from __future__ import annotations

import functools
import itertools
import ssl
from typing import Any, Protocol, cast

import httpx

#: connections per pool shard (one shard below this many connections)
SHARD_CONNECTIONS = 8


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The process's verifying SSL context (httpx's defaults: its CA bundle, or the one
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name), built once and shared by every pool."""
    return httpx.create_ssl_context()


class ShardedTransport(httpx.AsyncBaseTransport):
    def __init__(self, limits: httpx.Limits, shards: int, **transport: Any) -> None:
        per = httpx.Limits(
            max_connections=None if limits.max_connections is None
            else -(-limits.max_connections // shards),
            max_keepalive_connections=None if limits.max_keepalive_connections is None
            else -(-limits.max_keepalive_connections // shards),
            keepalive_expiry=limits.keepalive_expiry,
        )
        transport.setdefault("verify", ssl_context())
        self.shards = [httpx.AsyncHTTPTransport(limits=per, **transport) for _ in range(shards)]
        self._turn = itertools.cycle(self.shards)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await next(self._turn).handle_async_request(request)

    async def aclose(self) -> None:
        for shard in self.shards:
            await shard.aclose()


def transport_for(limits: httpx.Limits) -> httpx.AsyncBaseTransport:
    """One pool for up to ``SHARD_CONNECTIONS`` connections, else a :class:`ShardedTransport`
    with that many per shard."""
    total = limits.max_connections
    if total is None or total <= SHARD_CONNECTIONS:
        return httpx.AsyncHTTPTransport(limits=limits, verify=ssl_context())
    return ShardedTransport(limits, -(-total // SHARD_CONNECTIONS))


class HTTPClient(Protocol):
    """What a :class:`~adapt.llm.openai_compat.pool.ClientPool` needs of its HTTP client (an
    ``httpx.AsyncClient``, or the ``openai`` package's aiohttp client, an ``httpx2`` one)."""

    @property
    def is_closed(self) -> bool: ...

    async def aclose(self) -> None: ...


def aiohttp_available() -> bool:
    """Whether the ``openai[aiohttp]`` extra is installed (the package's aiohttp client)."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    import openai

    return hasattr(openai, "DefaultAioHttpClient")


def model_http_client(limits: httpx.Limits) -> HTTPClient:
    """A new HTTP client for model calls: the ``openai`` package's aiohttp client when its
    extra is installed, else httpx over :func:`transport_for`. Redirects are never followed (a
    redirect must not carry the endpoint's key to another URL); TLS is verified with the
    process's one context."""
    if aiohttp_available():
        import openai

        # (typed for httpx2's Limits on openai >= 3; its aiohttp adapter reads the fields)
        client: HTTPClient = openai.DefaultAioHttpClient(
            limits=cast(Any, limits), follow_redirects=False, verify=ssl_context())
        return client
    return httpx.AsyncClient(transport=transport_for(limits), follow_redirects=False)
