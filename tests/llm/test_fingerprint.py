"""The request fingerprint's fast path (orjson) hashes the very bytes of the general one
(``json.dumps``): a stored task's calls keep the fingerprints they were recorded with, so its
replay stays exact."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from adapt.llm import recording
from adapt.llm.base import ChatRequest, Message, ToolCall
from adapt.llm.recording import request_fingerprint


def general(request: ChatRequest) -> str:
    """The fingerprint as written before the fast path (model_dump and json.dumps)."""
    data = request.model_dump(mode="json", include=set(recording._COMPARED))
    for key in recording._OPTIONAL:
        if data.get(key) is None:
            data.pop(key, None)
    if request.messages is not None:
        data["messages"] = [m.wire() for m in request.messages]
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_fingerprints_recorded_before_the_fast_path_are_unchanged() -> None:
    # computed by the code before the fast path existed
    assert request_fingerprint(ChatRequest(
        prompt="Crafting commands:\nget 1 oak log\n> ", stop=["\n"], max_tokens=64,
        temperature=0.7, seed=3)) == (
        "5fe177c128b3a91106ad529503b7b2b73aa41bed9ec00f9cf8b2b5f43cd94942")
    assert request_fingerprint(ChatRequest(messages=[
        Message(role="system", content='Ré"su\\mé \x01\u2028 😀'),
        Message(role="assistant", content="",
                tool_calls=[ToolCall(id="c1", name="go", arguments='{"x": 1}')]),
        Message(role="tool", content="ok", tool_call_id="c1")],
        tool_choice="auto", temperature=0.0)) == (
        "23e0c6fa4efcd3287cdd2d551a57e7ef1b5a6fd5f5e8ce366f414169fd894ca1")


def _text(rng: random.Random) -> str:
    alphabet = ("abc XYZ\n\t\r\"\\/\x00\x01\x1f\x7f\x80é€\u2028\u2029\ufeff\uffff😀"
                "\U0010ffff{}[]:,")
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))


def _request(rng: random.Random) -> ChatRequest:
    chat = rng.random() < 0.5
    messages = None
    if chat:
        messages = []
        for _ in range(rng.randint(1, 4)):
            role = rng.choice(["system", "user", "assistant", "tool"])
            messages.append(Message(
                role=role, content=_text(rng),
                tool_calls=[ToolCall(id=_text(rng), name=_text(rng), arguments=_text(rng))]
                if role == "assistant" and rng.random() < 0.5 else None,
                tool_call_id=_text(rng) if role == "tool" else None))
    temperature = rng.choice([0.0, -0.0, 0.7, 1.0, 2.0, 1e-4, 1e-5, 0.1 + 0.2, 1 / 3, 1e15,
                              1e16, 1e300, rng.uniform(0, 2), float("nan"), float("inf")])
    return ChatRequest(
        messages=messages, prompt=None if chat else _text(rng),
        stop=[_text(rng) for _ in range(rng.randint(0, 3))],
        max_tokens=rng.choice([1, 64, 256, 2**40]), temperature=temperature,
        seed=rng.choice([None, 0, -5, 2**63 - 1, 2**64 - 1, 2**64, -(2**63) - 1, 10**30]),
        continuation=rng.choice([None, _text(rng)]),
        tool_choice=rng.choice([None, "auto", "required", "none"]),
        tools=rng.choice([None, [{"type": "function", "function": {"name": "f", "x": 1.5}}]]),
        json_schema=rng.choice([None, {"type": "object", "b": 1e-7, "a": [1, "é"]}]),
        role=rng.choice(["executor", "planner"]))


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_hashes_what_the_general_one_does(seed: int) -> None:
    rng = random.Random(seed)
    fast = 0
    for _ in range(500):
        request = _request(rng)
        try:
            expected = general(request)
        except UnicodeEncodeError:  # a lone surrogate: neither path can hash it
            with pytest.raises(UnicodeEncodeError):
                request_fingerprint(request)
            continue
        assert request_fingerprint(request) == expected, request
        fast += recording._fast_blob(request) is not None
    assert fast > 50  # the fast path was taken, not only the general one


def test_what_the_fast_path_leaves_to_the_general_one() -> None:
    plain = ChatRequest(prompt="p", temperature=0.5)
    assert recording._fast_blob(plain) is not None
    for other in (plain.model_copy(update={"temperature": 1e-5}),
                  plain.model_copy(update={"temperature": float("nan")}),
                  plain.model_copy(update={"seed": 2**64}),
                  plain.model_copy(update={"tools": [{"type": "function"}]}),
                  plain.model_copy(update={"json_schema": {"type": "object"}})):
        assert recording._fast_blob(other) is None
        assert request_fingerprint(other) == general(other)
