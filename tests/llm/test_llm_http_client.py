"""The model clients' default HTTP client over real sockets (``adapt.llm.transport``): the
``openai`` package's aiohttp client. What the mocked-transport tests check of the request
machinery must hold on it too: the request, retries, timeouts, refused connections, no
redirect followed (the key stays with its endpoint), the connection limit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from adapt.errors import ProviderError
from adapt.llm import ChatRequest, ClientPool, OpenAIChatModel
from adapt.llm.openai_compat.pool import MAX_CONNECTIONS
from adapt.llm.transport import aiohttp_available, model_http_client, ssl_context
from adapt.settings import MODEL_CONNECTIONS, Settings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def chat_body(text: str) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


class Served:
    """A real HTTP server on 127.0.0.1 that answers with ``handler`` and keeps the requests."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self.open = 0  # requests being handled now
        self.most_open = 0
        self.url = ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append({"path": request.path, "headers": dict(request.headers),
                              "body": await request.read()})
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            return await self.handler(request)
        finally:
            self.open -= 1


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Served]]]:
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> Served:
        served = Served(handler)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", served._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        served.url = f"http://127.0.0.1:{port}/v1"
        runners.append(runner)
        return served

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def pool() -> AsyncIterator[ClientPool]:
    pool = ClientPool()
    yield pool
    await pool.aclose()


def test_the_default_client_is_the_openai_packages_aiohttp_client() -> None:
    import httpx

    assert aiohttp_available()  # a dependency: openai[aiohttp]
    client: Any = model_http_client(httpx.Limits(max_connections=8, max_keepalive_connections=8))
    transport = client._transport
    assert type(transport).__name__ == "AiohttpTransport"
    assert transport.limits.max_connections == 8
    assert transport.ssl_context is ssl_context()  # TLS verified with the process's context
    assert client.follow_redirects is False


async def test_a_call_over_a_real_socket(serve: Any, pool: ClientPool) -> None:
    async def ok(request: web.Request) -> web.StreamResponse:
        return web.json_response(chat_body("get 2 stick"))

    served = await serve(ok)
    model = OpenAIChatModel("m", base_url=served.url, api_key="k-endpoint", pool=pool)
    response = await model.complete(ChatRequest(prompt="craft", stop=["\n"], max_tokens=9))
    assert response.text == "get 2 stick"
    assert response.usage.prompt_tokens == 3 and response.usage.completion_tokens == 2
    (sent,) = served.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer k-endpoint"
    assert sent["headers"]["Content-Type"] == "application/json"
    assert b'"max_tokens":9' in sent["body"] and b'"model":"m"' in sent["body"]


async def test_a_5xx_is_retried(serve: Any, pool: ClientPool) -> None:
    async def flaky(request: web.Request) -> web.StreamResponse:
        if len(served.requests) == 1:
            return web.json_response({"error": {"message": "busy"}}, status=503,
                                     headers={"retry-after-ms": "1"})
        return web.json_response(chat_body("fine"))

    served = await serve(flaky)
    model = OpenAIChatModel("m", base_url=served.url, api_key="k", max_retries=2, pool=pool)
    assert (await model.complete(ChatRequest(prompt="hi"))).text == "fine"
    assert len(served.requests) == 2


async def test_a_slow_server_times_out_after_the_retries(serve: Any, pool: ClientPool) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(3)
        return web.json_response(chat_body("too late"))

    served = await serve(slow)
    model = OpenAIChatModel("m", base_url=served.url, api_key="k", timeout=0.3,
                            max_retries=1, pool=pool)
    with pytest.raises(ProviderError, match="timed out"):
        await model.complete(ChatRequest(prompt="hi"))
    assert len(served.requests) == 2


async def test_a_refused_connection_is_a_provider_error(pool: ClientPool) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k",
                            max_retries=0, pool=pool)
    with pytest.raises(ProviderError, match="could not connect"):
        await model.complete(ChatRequest(prompt="hi"))


async def test_a_redirect_is_not_followed_and_the_key_stays(serve: Any, pool: ClientPool) -> None:
    async def elsewhere(request: web.Request) -> web.StreamResponse:
        return web.json_response(chat_body("followed"))

    target = await serve(elsewhere)

    async def redirect(request: web.Request) -> web.StreamResponse:
        raise web.HTTPTemporaryRedirect(f"{target.url}/chat/completions")

    served = await serve(redirect)
    model = OpenAIChatModel("m", base_url=served.url, api_key="k-secret", max_retries=0,
                            pool=pool)
    with pytest.raises(ProviderError):
        await model.complete(ChatRequest(prompt="hi"))
    assert len(served.requests) == 1
    assert target.requests == []  # the key never went to the redirect's URL


async def test_a_body_that_is_not_json_is_a_provider_error(serve: Any, pool: ClientPool) -> None:
    async def html(request: web.Request) -> web.StreamResponse:
        return web.Response(text="<html>proxy error</html>", content_type="text/html")

    served = await serve(html)
    model = OpenAIChatModel("m", base_url=served.url, api_key="k", max_retries=0, pool=pool)
    with pytest.raises(ProviderError, match="not JSON"):
        await model.complete(ChatRequest(prompt="hi"))


async def test_the_pools_connection_limit_holds(serve: Any) -> None:
    async def held(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.05)
        return web.json_response(chat_body("ok"))

    served = await serve(held)
    pool = ClientPool(max_connections=4, max_keepalive_connections=4)
    try:
        model = OpenAIChatModel("m", base_url=served.url, api_key="k", pool=pool)
        answers = await asyncio.gather(*(model.complete(ChatRequest(prompt=str(i)))
                                         for i in range(24)))
    finally:
        await pool.aclose()
    assert [a.text for a in answers] == ["ok"] * 24
    assert served.most_open == 4  # at most 4 requests at a time, and the 4 were used


async def test_a_closed_pool_opens_a_fresh_client(serve: Any) -> None:
    async def ok(request: web.Request) -> web.StreamResponse:
        return web.json_response(chat_body("again"))

    served = await serve(ok)
    pool = ClientPool()
    model = OpenAIChatModel("m", base_url=served.url, api_key="k", pool=pool)
    await model.complete(ChatRequest(prompt="1"))
    await pool.aclose()
    assert (await model.complete(ChatRequest(prompt="2"))).text == "again"
    await pool.aclose()
    assert len(served.requests) == 2


async def test_without_the_extra_the_client_is_httpx_sharded(
    monkeypatch: pytest.MonkeyPatch, serve: Any
) -> None:
    import httpx

    from adapt.llm import transport

    monkeypatch.setattr(transport, "aiohttp_available", lambda: False)

    async def ok(request: web.Request) -> web.StreamResponse:
        return web.json_response(chat_body("httpx"))

    served = await serve(ok)
    pool = ClientPool()
    try:
        model = OpenAIChatModel("m", base_url=served.url, api_key="k", pool=pool)
        client: Any = model._client()._client
        assert isinstance(client, httpx.AsyncClient) and not client.follow_redirects
        assert isinstance(client._transport, transport.ShardedTransport)
        assert (await model.complete(ChatRequest(prompt="1"))).text == "httpx"
    finally:
        await pool.aclose()


@pytest.mark.parametrize(("settings", "connections"), [
    ({}, MODEL_CONNECTIONS), ({"concurrency": 10}, MODEL_CONNECTIONS),
    ({"concurrency": 500}, 500), ({"concurrency": 500, "llm_max_connections": 20}, 20)])
def test_a_process_opens_a_connection_per_task_it_runs(settings: dict[str, Any],
                                                       connections: int) -> None:
    assert Settings.model_validate(settings).model_connections == connections
    assert MODEL_CONNECTIONS == MAX_CONNECTIONS  # never fewer than a pool of its own opens


async def test_a_pool_sized_for_its_tasks_holds_a_call_of_each_in_flight(serve: Any) -> None:
    """300 tasks' calls at once, on the pool a process of 300 tasks builds: all 300 are in
    flight together (on 256 connections 44 would wait for a whole call: 500 tasks at 1 s ran
    at 51 % of ideal so)."""
    tasks = 300
    everyone = asyncio.Event()

    async def held(request: web.Request) -> web.StreamResponse:
        if served.open >= tasks:
            everyone.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(everyone.wait(), 10)  # until every call is in flight
        return web.json_response(chat_body("ok"))

    served = await serve(held)
    pool = ClientPool(max_connections=Settings(concurrency=tasks).model_connections)
    try:
        model = OpenAIChatModel("m", base_url=served.url, api_key="k", pool=pool)
        answers = await asyncio.gather(*(model.complete(ChatRequest(prompt=str(i)))
                                         for i in range(tasks)))
    finally:
        await pool.aclose()
    assert [a.text for a in answers] == ["ok"] * tasks
    assert served.most_open == tasks
