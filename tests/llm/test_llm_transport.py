"""``adapt.llm.transport``'s httpx fallback (without the ``openai[aiohttp]`` extra): many
connections are spread over pool shards, few stay one pool."""

from __future__ import annotations

import httpx
import pytest

from adapt.llm.openai_compat.pool import ClientPool
from adapt.llm.transport import ShardedTransport, transport_for


async def test_large_pools_are_sharded_and_requests_take_turns() -> None:
    transport = transport_for(httpx.Limits(max_connections=256, max_keepalive_connections=256))
    assert isinstance(transport, ShardedTransport) and len(transport.shards) == 32
    assert all(s._pool._max_connections == 8 for s in transport.shards)
    seen: list[int] = []
    for i, shard in enumerate(transport.shards):
        async def handle(request: httpx.Request, i: int = i) -> httpx.Response:
            seen.append(i)
            return httpx.Response(200, json={"shard": i})
        shard.handle_async_request = handle  # type: ignore[method-assign]
    async with httpx.AsyncClient(transport=transport) as client:
        for _ in range(64):
            assert (await client.get("http://127.0.0.1:9/x")).status_code == 200
    assert sorted(seen) == sorted(list(range(32)) * 2)
    assert isinstance(transport_for(httpx.Limits(max_connections=8)), httpx.AsyncHTTPTransport)


async def test_without_aiohttp_the_default_pool_is_sharded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from adapt.llm import transport

    monkeypatch.setattr(transport, "aiohttp_available", lambda: False)
    pool = ClientPool()
    client = pool.get(base_url="http://127.0.0.1:9/v1", api_key="k", timeout=5.0, max_retries=0)
    assert isinstance(client._client._transport, ShardedTransport)  # type: ignore[attr-defined]
    await pool.aclose()


def test_every_pool_verifies_tls_with_the_one_process_context() -> None:
    """httpx builds an SSL context per transport, loading the CA bundle each time: 32 shards
    held a worker's event loop for seconds at its first model call. One context serves all."""
    import ssl

    from adapt.llm.transport import ssl_context

    sharded = transport_for(httpx.Limits(max_connections=256, max_keepalive_connections=256))
    single = transport_for(httpx.Limits(max_connections=4, max_keepalive_connections=4))
    assert isinstance(sharded, ShardedTransport) and len(sharded.shards) == 32
    pools = [shard._pool for shard in sharded.shards] + [single._pool]  # type: ignore[attr-defined]
    assert {id(pool._ssl_context) for pool in pools} == {id(ssl_context())}
    assert ssl_context().verify_mode == ssl.CERT_REQUIRED and ssl_context().check_hostname
