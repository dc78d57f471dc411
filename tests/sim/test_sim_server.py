"""The OpenAI-compatible simulator API, called with the official ``openai`` client."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import openai
import pytest
from starlette.applications import Starlette

from adapt.errors import InvalidConfig
from adapt.llm.base import ChatRequest
from adapt.sim import SimTextCraftModel
from adapt.sim.server import background_server, create_app
from tests.sim.minicraft import BEEHIVE, PLANKS, MiniCraft, build_prompt

GAME = MiniCraft(BEEHIVE, "craft beehive", PLANKS)
EXECUTOR = build_prompt(GAME.task_observation(), "")
PLANNER = build_prompt(GAME.task_observation(), "", executor=False)
MODEL = "sim:textcraft?capability=2&error_rate=0.1&seed=7"


@contextmanager
def running(app: Starlette) -> Iterator[str]:
    """Serve ``app`` on an ephemeral 127.0.0.1 port; yield the server root URL."""
    with background_server(app) as base_url:
        yield base_url.removesuffix("/v1")


def client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="sim", max_retries=0, timeout=20)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running(create_app()) as url:
        yield url


@pytest.fixture
def api(base: str) -> openai.OpenAI:
    httpx.post(f"{base}/_sim/reset").raise_for_status()
    return client(base)


def in_process(prompt: str, **kwargs: object) -> str:
    model = SimTextCraftModel(capability=2, error_rate=0.1, seed=7)
    return asyncio.run(model.complete(ChatRequest(prompt=prompt, **kwargs))).text


def test_completions_and_chat_agree_with_the_in_process_model(api: openai.OpenAI) -> None:
    completion = api.completions.create(model=MODEL, prompt=EXECUTOR, stop=["\n"], max_tokens=64)
    choice = completion.choices[0]
    assert choice.text == in_process(EXECUTOR, stop=["\n"]) == "get 2 oak logs"
    assert choice.finish_reason == "stop" and choice.index == 0
    assert completion.object == "text_completion" and completion.model == MODEL
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == -(-len(EXECUTOR) // 4)
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    chat = api.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": EXECUTOR}], stop="\n"
    )
    assert chat.object == "chat.completion"
    assert chat.choices[0].message.role == "assistant"
    assert chat.choices[0].message.content == choice.text
    assert chat.usage is not None and chat.usage.prompt_tokens == completion.usage.prompt_tokens
    listed = api.completions.create(model=MODEL.removeprefix("sim:"), prompt=[EXECUTOR])
    assert listed.choices[0].text == choice.text


def test_planner_over_chat_with_system_message(api: openai.OpenAI) -> None:
    demos, task = PLANNER.rsplit("\n\n", 2)[0], PLANNER[len(PLANNER.rsplit("\n\n", 2)[0]) + 2 :]
    chat = api.chat.completions.create(
        model=MODEL,
        messages=[{"role": "system", "content": demos}, {"role": "user", "content": task}],
    )
    text = chat.choices[0].message.content or ""
    assert text == in_process(demos + "\n\n" + task)
    assert "Execution Order:" in text


def test_stop_sequences_and_max_tokens(api: openai.OpenAI) -> None:
    full = api.completions.create(model=MODEL, prompt=PLANNER).choices[0]
    assert full.finish_reason == "stop" and full.text.count("\n") >= 3
    cut = api.completions.create(model=MODEL, prompt=PLANNER, stop=["Step 2", "Execution"])
    assert cut.choices[0].text == full.text[: full.text.index("Step 2")]
    assert cut.choices[0].finish_reason == "stop"
    short = api.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PLANNER}], max_tokens=5
    )
    assert short.choices[0].message.content == full.text[:20]
    assert short.choices[0].finish_reason == "length"


def test_model_listing(api: openai.OpenAI) -> None:
    ids = [m.id for m in api.models.list().data]
    assert ids == ["sim:textcraft?capability=1&error_rate=0&seed=0"]
    assert api.models.retrieve("sim:textcraft?capability=3").id == (
        "sim:textcraft?capability=3&error_rate=0&seed=0"
    )


def test_errors_are_openai_errors(api: openai.OpenAI, base: str) -> None:
    messages = [{"role": "user", "content": EXECUTOR}]
    with pytest.raises(openai.BadRequestError, match="capability"):
        api.chat.completions.create(model="sim:textcraft?capability=0", messages=messages)  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError, match="textcraft"):
        api.chat.completions.create(model="sim:nope", messages=messages)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match=r"[Ss]treaming"):
        api.completions.create(model=MODEL, prompt=EXECUTOR, stream=True)
    with pytest.raises(openai.BadRequestError, match="prompt"):
        api.completions.create(model=MODEL, prompt=["a", "b"])
    bad = httpx.post(
        f"{base}/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert set(error) >= {"message", "type", "code"} and error["type"] == "invalid_request_error"
    missing = httpx.post(f"{base}/v1/completions", json={"prompt": "x"})
    assert missing.status_code == 400 and "model" in missing.json()["error"]["message"]
    counters = httpx.get(f"{base}/_sim/log").json()["counters"]
    assert counters["status_400"] == 5 and counters["status_404"] == 1


def test_request_log(api: openai.OpenAI, base: str) -> None:
    for _ in range(2):
        api.completions.create(model=MODEL, prompt=EXECUTOR, stop=["\n"])
    api.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PLANNER}])
    log = httpx.get(f"{base}/_sim/log").json()
    entries = log["entries"]
    assert [e["kind"] for e in entries] == ["completion", "completion", "chat"]
    assert entries[0] == {
        "model": MODEL,
        "kind": "completion",
        "prompt_sha256": hashlib.sha256(EXECUTOR.encode()).hexdigest(),
        "completion": "get 2 oak logs",
        "status": 200,
    }
    hashes = [e["prompt_sha256"] for e in entries]
    assert len(set(hashes)) == 2  # the repeated call shows up
    assert log["counters"]["requests"] == 3 and log["counters"]["status_200"] == 3
    httpx.post(f"{base}/_sim/reset").raise_for_status()
    assert httpx.get(f"{base}/_sim/log").json()["entries"] == []


def test_log_is_bounded() -> None:
    with running(create_app(log_size=3)) as url:
        api = client(url)
        for index in range(5):
            api.completions.create(model=MODEL, prompt=f"{index}\n> ")
        log = httpx.get(f"{url}/_sim/log").json()
    assert log["size"] == 3 and log["counters"]["requests"] == 5
    assert [e["prompt_sha256"] for e in log["entries"]] == [
        hashlib.sha256(f"{i}\n> ".encode()).hexdigest() for i in (2, 3, 4)
    ]


def test_injected_faults() -> None:
    with running(create_app(error_rate=1.0, seed=3)) as url:
        api = client(url)
        seen: list[type[Exception]] = []
        for _ in range(12):
            with pytest.raises((openai.RateLimitError, openai.InternalServerError)) as info:
                api.completions.create(model=MODEL, prompt=EXECUTOR)
            seen.append(type(info.value))
        assert set(seen) == {openai.RateLimitError, openai.InternalServerError}
        log = httpx.get(f"{url}/_sim/log").json()
        assert log["counters"]["injected_errors"] == 12
        assert {e["status"] for e in log["entries"]} == {429, 500}
        # the fault sequence is seeded: after a reset it repeats
        httpx.post(f"{url}/_sim/reset").raise_for_status()
        again: list[type[Exception]] = []
        for _ in range(12):
            with pytest.raises((openai.RateLimitError, openai.InternalServerError)) as info:
                api.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": EXECUTOR}]
                )
            again.append(type(info.value))
        assert again == seen
        assert httpx.get(f"{url}/v1/models").status_code == 200  # listing is never faulted


def test_partial_fault_rate() -> None:
    with running(create_app(error_rate=0.3, seed=1)) as url:
        api = client(url)
        ok = 0
        for _ in range(40):
            try:
                api.completions.create(model=MODEL, prompt=EXECUTOR)
                ok += 1
            except (openai.RateLimitError, openai.InternalServerError):
                pass
    assert 18 <= ok <= 38


def test_latency_injection() -> None:
    with running(create_app(latency=0.3)) as url:
        api = client(url)
        started = time.perf_counter()
        api.completions.create(model=MODEL, prompt=EXECUTOR)
        assert time.perf_counter() - started >= 0.3


def test_latency_is_concurrent() -> None:
    async def many(url: str) -> float:
        api = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sim", max_retries=0)
        started = time.perf_counter()
        await asyncio.gather(
            *(api.completions.create(model=MODEL, prompt=f"{i}\n> ") for i in range(8))
        )
        await api.close()
        return time.perf_counter() - started

    with running(create_app(latency=0.3)) as url:
        assert asyncio.run(many(url)) < 1.5  # 8 x 0.3 s would be 2.4 s if serialised


def test_bad_app_options() -> None:
    with pytest.raises(InvalidConfig):
        create_app(latency=-1)
    with pytest.raises(InvalidConfig):
        create_app(error_rate=1.5)


def test_unknown_routes_answer_openai_errors(base: str) -> None:
    missing = httpx.get(f"{base}/v1/nothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong_method = httpx.get(f"{base}/v1/completions")
    assert wrong_method.status_code == 405 and "error" in wrong_method.json()
