"""A call's response as stored: only what the call's own columns do not already say.

Replay needs each recorded call's whole ``ChatResponse``; its text, usage, latency, model,
simulated flag and retries are columns of ``llm_calls`` anyway, so ``llm_calls.response`` keeps
the rest (usually just ``finish_reason``; the tool calls of an answer that called tools). :func:`full_response` rebuilds the whole response;
a row that holds a whole response (written before this) reads as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MISSING = object()


def response_extra(response: Mapping[str, Any], call: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a response (``ChatResponse`` JSON) that the call's columns do not hold;
    :func:`full_response` is its inverse."""
    derived = full_response({}, call)
    return {k: v for k, v in response.items() if derived.get(k, _MISSING) != v}


def full_response(extra: Mapping[str, Any], call: Mapping[str, Any]) -> dict[str, Any]:
    """A call's whole response: what its columns say, overridden by what was stored
    (rows written before responses were stored this way hold the whole response)."""
    return {
        "text": call["completion"],
        "usage": {"prompt_tokens": call["prompt_tokens"],
                  "completion_tokens": call["completion_tokens"],
                  # no column: a response that reports cached tokens keeps its usage whole
                  "estimated": call["usage_estimated"], "cached_tokens": 0},
        "latency_s": call["latency_s"], "model": call["model"],
        "simulated": call["simulated"], "finish_reason": None, "logprobs": None,
        "retries": call["retries"], "tool_calls": None, **extra,
    }
