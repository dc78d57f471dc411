"""``OpenAICompletionModel.score``: the token log-probabilities of a continuation (PASS)."""

from __future__ import annotations

from typing import Any

import httpx

from adapt.llm import OpenAICompletionModel
from tests.support.openai_http import completion_body

Server = Any  # tests.support.openai_http.FakeServer


def echoed(tokens: list[str], logprobs: list[float | None]) -> httpx.Response:
    body = completion_body("".join(tokens))
    offsets, at = [], 0
    for token in tokens:
        offsets.append(at)
        at += len(token)
    body["choices"][0]["logprobs"] = {"tokens": tokens, "token_logprobs": logprobs,
                                      "text_offset": offsets, "top_logprobs": None}
    return httpx.Response(200, json=body)


async def test_score_returns_the_continuations_token_logprobs(fake_server: Server,
                                                              local_url: str) -> None:
    # "[Summary]" + " 36 apples" ; the token " 3" starts exactly at the boundary
    fake_server.responses = [echoed(["[", "Summary", "]", " 3", "6", " apples"],
                                    [None, -1.0, -0.5, -2.0, -0.25, -0.75])]
    model = OpenAICompletionModel("base", base_url=local_url, http_client=fake_server.client())
    assert await model.score("[Summary]", " 36 apples") == [-2.0, -0.25, -0.75]
    sent = fake_server.bodies[0]
    assert sent == {"model": "base", "prompt": "[Summary] 36 apples", "echo": True,
                    "max_tokens": 0, "logprobs": 0, "temperature": 0.0}


async def test_a_token_across_the_boundary_counts_for_the_continuation(
        fake_server: Server, local_url: str) -> None:
    fake_server.responses = [echoed(["ab", "cd"], [None, -3.0])]
    model = OpenAICompletionModel("base", base_url=local_url, http_client=fake_server.client())
    assert await model.score("abc", "d") == [-3.0]


async def test_no_logprobs_or_an_error_gives_none(fake_server: Server, ok_completion: Any,
                                                  error: Any, local_url: str) -> None:
    model = OpenAICompletionModel("base", base_url=local_url, http_client=fake_server.client(),
                                  max_retries=0)
    fake_server.responses = [ok_completion("x")]  # "logprobs": null
    assert await model.score("a", "b") is None
    fake_server.responses = [error(400, "echo is not supported")]
    assert await model.score("a", "b") is None
