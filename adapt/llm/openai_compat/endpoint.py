"""Which endpoint a model calls and how: its base URL, the API key sent to it, and how it takes
a grammar (guided decoding).

``OPENAI_BASE_URL`` is the endpoint when none is given (else the OpenAI API), and
``OPENAI_API_KEY`` belongs to that endpoint alone: it is never sent to another base URL. A
loopback server (vLLM, Ollama, llama.cpp, the simulator) may run without a key.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from adapt.errors import ModelSpecError, ProviderError
from adapt.llm.guard import is_loopback

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_API_KEY = "sk-local-no-key-required"  # sent to loopback servers when no key is set

#: how an OpenAI-compatible endpoint takes a request's GBNF grammar (``ChatRequest.grammar``):
#: llama.cpp's server reads ``grammar`` in the request body (its README, /completion and the
#: OpenAI-compatible endpoints); vLLM reads ``guided_grammar`` (its "extra parameters",
#: structured outputs; the xgrammar backend accepts GBNF). ``None``: the endpoint is not known
#: to support guided decoding and the grammar is not sent.
GUIDED_DECODING_FIELDS: dict[str, str] = {"llama.cpp": "grammar", "vllm": "guided_grammar"}


def validate_base_url(base_url: str) -> str:
    """``base_url`` unchanged if it is an absolute http(s) URL; else :class:`ModelSpecError`."""
    try:
        parts = urlsplit(base_url)
        ok = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        ok = False
    if not ok:
        raise ModelSpecError(
            f"malformed base_url {base_url!r}: expected an http(s) URL such as "
            "http://127.0.0.1:8000/v1 or https://api.openai.com/v1"
        )
    return base_url


def env_base_url() -> str:
    """The endpoint of the environment's ``OPENAI_BASE_URL``, else the OpenAI API."""
    return os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


def endpoint_url(base_url: str | None) -> str:
    """The base URL a model calls (``base_url``, else :func:`env_base_url`), checked, without
    its trailing slash."""
    return validate_base_url(base_url or env_base_url()).rstrip("/")


def endpoint_key(base_url: str, api_key: str | None, model: str) -> str:
    """The key sent to ``base_url`` (as :func:`endpoint_url` returns it): ``api_key``; else
    ``OPENAI_API_KEY`` when ``base_url`` is :func:`env_base_url`; else, on loopback only, a
    placeholder. Anything else is a :class:`ProviderError` that says which key to set."""
    # OPENAI_API_KEY belongs to OPENAI_BASE_URL (or the OpenAI API): never sent elsewhere
    env_key = os.environ.get("OPENAI_API_KEY") if base_url == env_base_url().rstrip("/") \
        else None
    key = api_key or env_key
    if not key:
        if not is_loopback(base_url):
            raise ProviderError(
                f"no API key for {base_url} (model {model!r}): set OPENAI_API_KEY "
                "(or ADAPT_OPENAI_API_KEY for the service), or pass api_key="
            )
        key = LOCAL_API_KEY
    return key


def check_guided_decoding(guided_decoding: str | None) -> str | None:
    """``guided_decoding`` if it names a server in :data:`GUIDED_DECODING_FIELDS` (or is None);
    else :class:`ModelSpecError`."""
    if guided_decoding is not None and guided_decoding not in GUIDED_DECODING_FIELDS:
        raise ModelSpecError(
            f"guided_decoding must be one of {sorted(GUIDED_DECODING_FIELDS)} (the server "
            f"that takes grammars), not {guided_decoding!r}")
    return guided_decoding
