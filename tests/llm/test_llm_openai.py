"""OpenAI-compatible backends over a mocked HTTP transport: request shape, usage, retries."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from adapt.errors import ModelSpecError, ProviderError
from adapt.llm import (
    ChatRequest,
    ClientPool,
    Message,
    OpenAIChatModel,
    OpenAICompletionModel,
)
from adapt.llm.gbnf import GrammarError
from adapt.llm.openai_compat.models import estimate_tokens
from adapt.llm.openai_compat.pool import close_default_pool, default_pool

Server = Any  # tests.support.openai_http.FakeServer


def chat_request(**kw: Any) -> ChatRequest:
    base: dict[str, Any] = {
        "messages": [
            Message(role="system", content="You are a crafter."),
            Message(role="user", content="craft a stick"),
        ],
        "stop": ["\n"],
        "max_tokens": 17,
        "temperature": 0.5,
        "seed": 7,
    }
    base.update(kw)
    return ChatRequest(**base)


async def test_chat_request_shape_and_response(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat("> get 1 stick", usage=(42, 5), finish_reason="length")]
    model = OpenAIChatModel(
        "my-model", base_url=local_url, api_key="k-test", http_client=fake_server.client()
    )
    response = await model.complete(chat_request())

    assert len(fake_server.requests) == 1
    sent = fake_server.requests[0]
    assert sent.url == "http://127.0.0.1:9/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer k-test"
    assert fake_server.bodies[0] == {
        "model": "my-model",
        "messages": [
            {"role": "system", "content": "You are a crafter."},
            {"role": "user", "content": "craft a stick"},
        ],
        "stop": ["\n"],
        "max_tokens": 17,
        "temperature": 0.5,
        "seed": 7,
    }
    assert response.text == "> get 1 stick"
    assert response.usage.prompt_tokens == 42
    assert response.usage.completion_tokens == 5
    assert response.usage.estimated is False
    assert response.finish_reason == "length"
    assert response.model == "test-model"  # what the server says served the call
    assert response.simulated is False
    assert 0 < response.latency_s < 5
    assert model.name == "my-model"


async def test_empty_stop_and_none_seed_are_omitted(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat()]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    await model.complete(ChatRequest(prompt="hi", stop=[], seed=None))
    body = fake_server.bodies[0]
    assert "stop" not in body
    assert "seed" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # prompt → one user message


async def test_loopback_without_key_sends_placeholder(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat()]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    await model.complete(ChatRequest(prompt="hi"))
    assert fake_server.requests[0].headers["authorization"].startswith("Bearer sk-local")


async def test_reasoning_models_get_max_completion_tokens(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat()]
    model = OpenAIChatModel("o3-mini", base_url=local_url, http_client=fake_server.client())
    await model.complete(chat_request())
    body = fake_server.bodies[0]
    assert body["max_completion_tokens"] == 17
    assert "max_tokens" not in body and "temperature" not in body


async def test_missing_usage_is_estimated(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat("abcdefgh" * 4, usage=None)]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    request = ChatRequest(prompt="x" * 400)
    response = await model.complete(request)
    assert response.usage.estimated is True
    assert response.usage.prompt_tokens == 100
    assert response.usage.completion_tokens == 8
    assert estimate_tokens("") == 0 and estimate_tokens("ab") == 1


async def test_null_content_gives_empty_text(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat(None)]
    model = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    assert (await model.complete(ChatRequest(prompt="hi"))).text == ""


async def test_simulated_flag_is_passed_through(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat()]
    model = OpenAIChatModel(
        "sim:x", base_url=local_url, simulated=True, http_client=fake_server.client()
    )
    assert model.simulated is True
    assert (await model.complete(ChatRequest(prompt="hi"))).simulated is True


async def test_completion_model_request_shape(
    fake_server: Server, ok_completion: Any, local_url: str
) -> None:
    fake_server.responses = [ok_completion(" stick", usage=(20, 2))]
    model = OpenAICompletionModel("instruct", base_url=local_url, http_client=fake_server.client())
    response = await model.complete(chat_request(seed=None, stop=["\n", "END"]))
    sent = fake_server.requests[0]
    assert sent.url.path == "/v1/completions"
    assert fake_server.bodies[0] == {
        "model": "instruct",
        "prompt": "You are a crafter.\n\ncraft a stick",  # messages joined (ChatRequest.as_prompt)
        "stop": ["\n", "END"],
        "max_tokens": 17,
        "temperature": 0.5,
    }
    assert response.text == " stick"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (20, 2)
    assert response.finish_reason == "stop"


async def test_completion_missing_usage_is_estimated(
    fake_server: Server, ok_completion: Any, local_url: str
) -> None:
    fake_server.responses = [ok_completion("abcd", usage=None)]
    model = OpenAICompletionModel("instruct", base_url=local_url, http_client=fake_server.client())
    response = await model.complete(ChatRequest(prompt="y" * 40))
    assert response.usage.estimated
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (10, 1)


# -- retries and errors -------------------------------------------------------------------


async def test_429_then_500_then_ok_is_retried(
    fake_server: Server, ok_chat: Any, error: Any, local_url: str
) -> None:
    fake_server.responses = [error(429, "rate limited"), error(500, "boom"), ok_chat("fine")]
    model = OpenAIChatModel(
        "m", base_url=local_url, max_retries=3, http_client=fake_server.client()
    )
    response = await model.complete(ChatRequest(prompt="hi"))
    assert response.text == "fine"
    assert len(fake_server.requests) == 3


async def test_401_fails_at_once_with_a_hint(
    fake_server: Server, error: Any, local_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake_server.responses = [error(401, "Incorrect API key provided")]
    model = OpenAIChatModel(
        "m", base_url=local_url, max_retries=5, http_client=fake_server.client()
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(ChatRequest(prompt="hi"))
    assert len(fake_server.requests) == 1
    message = str(info.value)
    assert "HTTP 401" in message
    # the upstream body is logged, never put in the error (a user may see the error)
    assert "Incorrect API key provided" not in message
    assert "Incorrect API key provided" in caplog.text
    assert "API key" in message and "OPENAI_API_KEY" in message
    assert local_url in message and "'m'" in message


@pytest.mark.parametrize(
    ("status", "hint"),
    [(400, "model name"), (404, "model name"), (403, "permissions"), (422, "parameters")],
)
async def test_other_4xx_fail_at_once(
    fake_server: Server, error: Any, local_url: str, status: int, hint: str
) -> None:
    fake_server.responses = [error(status, "nope")]
    model = OpenAIChatModel(
        "gpt-nope", base_url=local_url, max_retries=5, http_client=fake_server.client()
    )
    with pytest.raises(ProviderError, match=f"HTTP {status}") as info:
        await model.complete(ChatRequest(prompt="hi"))
    assert len(fake_server.requests) == 1
    assert hint in str(info.value) and "gpt-nope" in str(info.value)


async def test_exhausted_retries_raise_provider_error(
    fake_server: Server, error: Any, local_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake_server.responses = [error(503, "overloaded, try later")]
    model = OpenAIChatModel(
        "m", base_url=local_url, max_retries=2, http_client=fake_server.client()
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(ChatRequest(prompt="hi"))
    assert len(fake_server.requests) == 3  # first try + 2 retries
    message = str(info.value)
    assert "HTTP 503" in message and "after 2 retries" in message
    assert "overloaded, try later" not in message
    assert "overloaded, try later" in caplog.text


async def test_exhausted_429_raise_provider_error(
    fake_server: Server, error: Any, local_url: str
) -> None:
    fake_server.responses = [error(429, "Rate limit reached")]
    model = OpenAIChatModel(
        "m", base_url=local_url, max_retries=1, http_client=fake_server.client()
    )
    with pytest.raises(ProviderError, match=r"HTTP 429 after 1 retries$"):
        await model.complete(ChatRequest(prompt="hi"))
    assert len(fake_server.requests) == 2


async def test_timeout_is_retried_then_raises(fake_server: Server, local_url: str) -> None:
    fake_server.responses = [httpx.ReadTimeout("slow")]
    model = OpenAIChatModel(
        "m", base_url=local_url, timeout=0.5, max_retries=1, http_client=fake_server.client()
    )
    with pytest.raises(ProviderError, match="timed out"):
        await model.complete(ChatRequest(prompt="hi"))
    assert len(fake_server.requests) == 2


async def test_timeout_then_ok(fake_server: Server, ok_chat: Any, local_url: str) -> None:
    fake_server.responses = [httpx.ReadTimeout("slow"), ok_chat("late but fine")]
    model = OpenAIChatModel(
        "m", base_url=local_url, max_retries=1, http_client=fake_server.client()
    )
    assert (await model.complete(ChatRequest(prompt="hi"))).text == "late but fine"


async def test_connection_error_raises(fake_server: Server, local_url: str) -> None:
    fake_server.responses = [httpx.ConnectError("refused")]
    model = OpenAIChatModel(
        "m", base_url=local_url, max_retries=0, http_client=fake_server.client()
    )
    with pytest.raises(ProviderError, match=r"could not connect.*is the server running"):
        await model.complete(ChatRequest(prompt="hi"))


def test_bad_construction_arguments(local_url: str) -> None:
    with pytest.raises(ModelSpecError, match="non-empty"):
        OpenAIChatModel("", base_url=local_url)
    with pytest.raises(ModelSpecError, match="malformed base_url"):
        OpenAIChatModel("m", base_url="127.0.0.1:8000/v1")


# -- connection pool ----------------------------------------------------------------------


async def test_pool_shares_clients_and_connections(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat("x")]
    pool = ClientPool(http_client=fake_server.client())
    a = OpenAIChatModel("a", base_url=local_url, api_key="k", pool=pool)
    b = OpenAICompletionModel("b", base_url=local_url, api_key="k", pool=pool)
    c = OpenAIChatModel("c", base_url=local_url, api_key="other", pool=pool)
    assert a._client() is b._client()
    assert a._client() is not c._client()
    assert len(pool) == 2

    results = await asyncio.gather(*(a.complete(ChatRequest(prompt=str(i))) for i in range(64)))
    assert len(results) == 64 and len(fake_server.requests) == 64

    await pool.aclose()
    assert len(pool) == 0
    # A closed pool opens a fresh HTTP client on next use.
    fresh = pool.get(base_url=local_url, api_key="k", timeout=60.0, max_retries=3)
    assert fresh is not None and len(pool) == 1
    await pool.aclose()


async def test_pool_limits_are_set() -> None:
    pool = ClientPool(max_connections=8, max_keepalive_connections=2)
    client = pool.get(base_url="http://127.0.0.1:9/v1", api_key="k", timeout=5.0, max_retries=1)
    http: Any = client._client
    limits = http._transport.limits  # the openai package's aiohttp transport
    assert (limits.max_connections, limits.max_keepalive_connections) == (8, 2)
    await pool.aclose()
    assert http.is_closed


async def test_default_pool_is_per_loop_and_shared(local_url: str) -> None:
    a = OpenAIChatModel("a", base_url=local_url)
    b = OpenAIChatModel("b", base_url=local_url)
    assert a._client() is b._client()
    assert default_pool() is default_pool()
    await close_default_pool()
    assert len(default_pool()) == 0
    await close_default_pool()


GRAMMAR = 'root ::= "get " [1-9] " stick"\n'


async def test_grammar_not_sent_unless_configured_and_validated_first(
    fake_server: Server, ok_chat: Any, local_url: str
) -> None:
    fake_server.responses = [ok_chat()]
    plain = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client())
    await plain.complete(chat_request(grammar=GRAMMAR))
    assert "grammar" not in fake_server.bodies[0] and "guided_grammar" not in fake_server.bodies[0]
    guided = OpenAIChatModel("m", base_url=local_url, http_client=fake_server.client(),
                             guided_decoding="llama.cpp")
    with pytest.raises(GrammarError, match="undefined rule"):
        await guided.complete(chat_request(grammar='root ::= missing\n'))
    assert len(fake_server.bodies) == 1  # the malformed grammar never left the process
    with pytest.raises(ModelSpecError, match="server_kind must be one of"):
        OpenAIChatModel("m", base_url=local_url, guided_decoding="tgi")


@pytest.mark.parametrize("base", ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/",
                                  "http://h:1", "https://x.example/d/?api-version=1"])
def test_requests_go_to_the_url_the_client_would_join(base: str) -> None:
    """The backends hand the client an absolute URL (joined once per client and path): the
    one the client itself joins from its base URL and a relative path."""
    from openai import AsyncOpenAI

    from adapt.llm.openai_compat.models import _absolute_url

    client = AsyncOpenAI(base_url=base, api_key="k")
    for path in ("/chat/completions", "/completions"):
        assert _absolute_url(client, path) == str(client._prepare_url(path))
        assert _absolute_url(client, path) is _absolute_url(client, path)  # joined once
    client.base_url = "http://other:2/v2"  # a new base URL: joined again
    assert _absolute_url(client, "/completions") == "http://other:2/v2/completions"
