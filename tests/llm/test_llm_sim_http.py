"""The OpenAI backends through the real ``openai`` client over real HTTP, against the
simulator's OpenAI-compatible server (``adapt.sim.server``) run by uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from adapt.errors import ProviderError
from adapt.llm import (
    ChatRequest,
    ClientPool,
    Message,
    OpenAIChatModel,
    OpenAICompletionModel,
    load_model,
)
from adapt.sim import from_spec
from tests.support.simserver import SimServer, start_sim_server, stop_sim_server

SIM = "sim:textcraft?capability=1"

PLANNER_PROMPT = (
    "Crafting commands:\n"
    "craft 4 oak planks using 1 oak log\n"
    "craft 4 stick using 2 oak planks\n\n"
    "Goal: craft 4 stick.\n"
)


@pytest.fixture(scope="module")
def sim_server() -> Iterator[SimServer]:
    sim = start_sim_server()
    yield sim
    stop_sim_server(sim)


@pytest.fixture(scope="module")
def flaky_server() -> Iterator[SimServer]:
    sim = start_sim_server(error_rate=0.4, seed=11)
    yield sim
    stop_sim_server(sim)


@pytest.fixture(scope="module")
def broken_server() -> Iterator[SimServer]:
    sim = start_sim_server(error_rate=1.0)
    yield sim
    stop_sim_server(sim)


@pytest.fixture
def sim(sim_server: SimServer) -> SimServer:
    sim_server.reset()
    return sim_server


@pytest.fixture
async def pool() -> AsyncIterator[ClientPool]:
    pool = ClientPool()
    yield pool
    await pool.aclose()


async def _fast_retry_hook(response: httpx.Response) -> None:
    """Ask the client to retry after 1 ms (the simulator sends no retry-after header)."""
    if response.status_code == 429 or response.status_code >= 500:
        response.headers["retry-after-ms"] = "1"


@pytest.fixture
async def fast_retry_pool() -> AsyncIterator[ClientPool]:
    http = httpx.AsyncClient(event_hooks={"response": [_fast_retry_hook]})
    pool = ClientPool(http_client=http)
    yield pool
    await pool.aclose()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def in_process(request: ChatRequest) -> str:
    return (await from_spec(SIM).complete(request)).text


# -- request shape, stop sequences, usage ------------------------------------------------------


async def test_chat_over_http(sim: SimServer, pool: ClientPool) -> None:
    model = load_model(f"openai:{SIM}@{sim.base_url}", pool=pool, max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    assert model.simulated is True

    full_request = ChatRequest(prompt=PLANNER_PROMPT, max_tokens=1000)
    full = await model.complete(full_request)
    assert "\n" in full.text and "Execution Order:" in full.text
    assert full.text == await in_process(full_request)  # same simulator, same answer

    one_line = await model.complete(ChatRequest(prompt=PLANNER_PROMPT, stop=["\n"]))
    assert one_line.text == full.text.split("\n")[0]
    assert "\n" not in one_line.text
    assert one_line.finish_reason == "stop"

    for response in (full, one_line):
        assert response.usage.prompt_tokens > 0
        assert response.usage.completion_tokens > 0
        assert response.usage.estimated is False  # reported by the server
        assert response.simulated is True
        assert response.model.startswith("sim:textcraft?capability=1")
        assert response.latency_s > 0
    assert one_line.usage.completion_tokens < full.usage.completion_tokens

    log = sim.log()
    assert log["counters"]["kind_chat"] == 2
    assert [(e["kind"], e["status"]) for e in log["entries"]] == [("chat", 200), ("chat", 200)]
    assert [e["prompt_sha256"] for e in log["entries"]] == [sha(PLANNER_PROMPT)] * 2
    assert [e["completion"] for e in log["entries"]] == [full.text, one_line.text]


async def test_chat_messages_are_sent_as_messages(sim: SimServer, pool: ClientPool) -> None:
    model = load_model(f"openai:{SIM}@{sim.base_url}", pool=pool)
    request = ChatRequest(
        messages=[
            Message(role="system", content="You craft things."),
            Message(role="user", content=PLANNER_PROMPT),
        ]
    )
    response = await model.complete(request)
    # The server joins messages like ChatRequest.as_prompt: both contents arrived, in order.
    (entry,) = sim.log()["entries"]
    assert entry["prompt_sha256"] == sha(request.as_prompt())
    assert response.text == await in_process(request)


async def test_max_tokens_truncates(sim: SimServer, pool: ClientPool) -> None:
    model = load_model(f"openai:{SIM}@{sim.base_url}", pool=pool)
    response = await model.complete(ChatRequest(prompt=PLANNER_PROMPT, max_tokens=5))
    assert response.finish_reason == "length"
    assert 0 < len(response.text) <= 20
    assert response.usage.completion_tokens <= 5


async def test_completions_over_http(sim: SimServer, pool: ClientPool) -> None:
    model = load_model(f"openai-completions:{SIM}@{sim.base_url}", pool=pool)
    assert isinstance(model, OpenAICompletionModel)
    executor_prompt = PLANNER_PROMPT + "> "
    response = await model.complete(ChatRequest(prompt=executor_prompt, stop=["\n"]))
    assert response.text == await in_process(ChatRequest(prompt=executor_prompt, stop=["\n"]))
    assert response.text and "\n" not in response.text
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0
    plan = await model.complete(ChatRequest(prompt=PLANNER_PROMPT, stop=["\n"]))
    assert plan.text.startswith("# Think:") and "\n" not in plan.text

    entries = sim.log()["entries"]
    assert [(e["kind"], e["status"]) for e in entries] == [("completion", 200)] * 2
    assert entries[0]["prompt_sha256"] == sha(executor_prompt)


async def test_many_concurrent_tasks_share_one_pool(sim: SimServer, pool: ClientPool) -> None:
    chat = load_model(f"openai:{SIM}@{sim.base_url}", pool=pool)
    legacy = load_model(f"openai-completions:{SIM}@{sim.base_url}", pool=pool)
    requests = [ChatRequest(prompt=PLANNER_PROMPT, stop=["\n"], seed=i) for i in range(60)]
    results = await asyncio.gather(
        *(m.complete(r) for r in requests for m in (chat, legacy)),
    )
    assert len({r.text for r in results}) == 1
    assert len(pool) == 1  # one client for both models: same endpoint, key and settings
    assert sim.log()["counters"]["status_200"] == 120


async def test_default_pool_without_explicit_pool(sim: SimServer) -> None:
    from adapt.llm.openai_compat.pool import close_default_pool

    model = load_model(f"openai:{SIM}@{sim.base_url}")
    try:
        assert (await model.complete(ChatRequest(prompt=PLANNER_PROMPT, stop=["\n"]))).text
    finally:
        await close_default_pool()


async def test_unknown_sim_model_is_a_404_without_retries(
    sim: SimServer, pool: ClientPool, caplog: pytest.LogCaptureFixture
) -> None:
    model = load_model(f"openai:sim:nonexistent@{sim.base_url}", pool=pool, max_retries=3)
    with pytest.raises(ProviderError) as info:
        await model.complete(ChatRequest(prompt="hi"))
    message = str(info.value)
    assert "HTTP 404" in message and "model name" in message
    assert "does not exist" in caplog.text  # the server's body: logged, not in the error
    assert sim.log()["counters"]["requests"] == 1


# -- injected faults ---------------------------------------------------------------------------


async def test_injected_errors_are_retried(
    flaky_server: SimServer, fast_retry_pool: ClientPool
) -> None:
    flaky_server.reset()
    model = load_model(
        f"openai:{SIM}@{flaky_server.base_url}", pool=fast_retry_pool, max_retries=10
    )
    results = await asyncio.gather(
        *(model.complete(ChatRequest(prompt=PLANNER_PROMPT, stop=["\n"])) for _ in range(20))
    )
    assert all(r.text.startswith("# Think:") for r in results)
    counters = flaky_server.log()["counters"]
    assert counters["status_200"] == 20
    assert counters["injected_errors"] > 0
    assert counters["requests"] == 20 + counters["injected_errors"]


async def test_error_rate_one_surfaces_provider_error(
    broken_server: SimServer, fast_retry_pool: ClientPool, caplog: pytest.LogCaptureFixture
) -> None:
    broken_server.reset()
    model = load_model(
        f"openai:{SIM}@{broken_server.base_url}", pool=fast_retry_pool, max_retries=3
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(ChatRequest(prompt=PLANNER_PROMPT))
    message = str(info.value)
    assert "after 3 retries" in message and "injected by the simulator" in caplog.text
    assert broken_server.base_url in message
    counters = broken_server.log()["counters"]
    assert counters["requests"] == 4 and counters["injected_errors"] == 4


async def test_default_backoff_retries_then_fails(
    broken_server: SimServer, pool: ClientPool
) -> None:
    """Without the retry-after hook the client's own exponential backoff applies (~0.5 s)."""
    broken_server.reset()
    model = load_model(f"openai:{SIM}@{broken_server.base_url}", pool=pool, max_retries=1)
    started = time.perf_counter()
    with pytest.raises(ProviderError, match=r"HTTP (429|500) after 1 retries"):
        await model.complete(ChatRequest(prompt=PLANNER_PROMPT))
    assert time.perf_counter() - started >= 0.3  # 0.5 s minus up to 25 % jitter
    assert broken_server.log()["counters"]["requests"] == 2
