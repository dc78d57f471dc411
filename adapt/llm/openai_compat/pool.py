"""Model clients shared through a :class:`ClientPool`: one ``AsyncOpenAI`` per
``(base_url, api_key, timeout, max_retries)``, all over one HTTP connection pool (the ``openai``
package's aiohttp client: :func:`adapt.llm.transport.model_http_client`). A model built without
a pool uses the running event loop's default pool (:func:`default_pool`); close it with
:func:`close_default_pool`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

import httpx
from openai import AsyncOpenAI

from adapt.llm.transport import HTTPClient, model_http_client

T = TypeVar("T")

#: connections a pool opens at most by default (an LLM call in flight holds one; the service
#: sizes its pool by its concurrency: ``adapt.settings.Settings.model_connections``)
MAX_CONNECTIONS = 256
#: as many as may be open: with many calls in flight, closing the surplus after each answer
#: only meant opening a new connection for the next call (idle ones expire after 5 s)
MAX_KEEPALIVE_CONNECTIONS = MAX_CONNECTIONS

_PoolKey = tuple[str, str, float, int]


class ClientPool:
    """One ``AsyncOpenAI`` per (base_url, api_key, timeout, max_retries), one HTTP pool.

    Belongs to one event loop (HTTP connections do). ``await pool.aclose()`` closes the HTTP
    connections; the pool can be used again afterwards (it opens a fresh one). Pass
    ``http_client`` to supply your own (e.g. an ``httpx.MockTransport`` in tests); the pool
    then closes it on :meth:`aclose` too.
    """

    def __init__(
        self,
        *,
        http_client: HTTPClient | None = None,
        max_connections: int = MAX_CONNECTIONS,
        max_keepalive_connections: int | None = None,
    ) -> None:
        self._http: HTTPClient | None = http_client
        self._limits = httpx.Limits(
            max_connections=max_connections,
            # None: keep alive as many as may be open (see MAX_KEEPALIVE_CONNECTIONS)
            max_keepalive_connections=max_connections if max_keepalive_connections is None
            else max_keepalive_connections,
        )
        self._clients: dict[_PoolKey, AsyncOpenAI] = {}

    def __len__(self) -> int:
        return len(self._clients)

    def get(self, *, base_url: str, api_key: str, timeout: float, max_retries: int) -> AsyncOpenAI:
        """The shared client for these settings, created on first use."""
        if self._http is None or self._http.is_closed:
            self._clients.clear()
            self._http = model_http_client(self._limits)
        key: _PoolKey = (base_url, api_key, float(timeout), int(max_retries))
        client = self._clients.get(key)
        if client is None:
            # ``openai`` >= 2 is typed for httpx2 clients but accepts httpx ones at runtime.
            client = AsyncOpenAI(
                base_url=base_url,
                api_key=api_key,
                timeout=timeout,
                max_retries=max_retries,
                http_client=cast(Any, self._http),
            )
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        """Close the HTTP connections and forget the clients."""
        self._clients.clear()
        http, self._http = self._http, None
        if http is not None and not http.is_closed:
            await http.aclose()


_default_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientPool] = (
    weakref.WeakKeyDictionary()
)


def default_pool() -> ClientPool:
    """The running event loop's shared pool (used by models built without ``pool=``)."""
    loop = asyncio.get_running_loop()
    pool = _default_pools.get(loop)
    if pool is None:
        pool = _default_pools[loop] = ClientPool()
    return pool


async def close_default_pool() -> None:
    """Close the running event loop's default pool, if it has one."""
    pool = _default_pools.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.aclose()


async def closing_default_pool(work: Awaitable[T]) -> T:
    """Await ``work``, then close the running loop's default pool (for ``asyncio.run`` entry
    points: the HTTP client's connections are closed with the loop, not left to the garbage
    collector, which warns about them)."""
    try:
        return await work
    finally:
        await close_default_pool()
