"""Which endpoint a model calls and how: its base URL, the API key sent to it, and the fields
its server reads a grammar or a JSON schema from (constrained decoding, structured output).

``OPENAI_BASE_URL`` is the endpoint when none is given (else the OpenAI API), and
``OPENAI_API_KEY`` belongs to that endpoint alone: it is never sent to another base URL. A
loopback server (vLLM, Ollama, llama.cpp, the simulator) may run without a key.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from adapt.errors import ModelSpecError, ProviderError
from adapt.llm.guard import is_loopback

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_API_KEY = "sk-local-no-key-required"  # sent to loopback servers when no key is set

#: the server kinds adapt knows, and where each reads a request's GBNF grammar
#: (``ChatRequest.grammar``) and JSON schema (``ChatRequest.json_schema``):
#:
#: - ``vllm``: ``structured_outputs: {"grammar": ...}`` / ``{"json": ...}`` (vLLM's structured
#:   outputs; the ``guided_grammar`` / ``guided_json`` fields were removed in vLLM 0.12, and a
#:   server that does not know a field ignores it);
#: - ``llama.cpp``: ``grammar`` / ``json_schema`` in the body (llama.cpp's server, on its
#:   OpenAI-compatible endpoints too; it refuses a request with both);
#: - ``openai``: no grammar; ``response_format: {"type": "json_schema", ...}``.
#:
#: A server of unknown kind (``None``) gets neither: the decoding monitor corrects the output,
#: and a JSON answer is parsed if it comes (the planner falls back to its text format).
SERVER_KINDS: tuple[str, ...] = ("openai", "vllm", "llama.cpp")


def structured_fields(server_kind: str | None, *, grammar: str | None,
                      json_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The request body fields that carry ``grammar`` or ``json_schema`` to a server of
    ``server_kind`` (the schema wins when a request has both: llama.cpp refuses both, and a
    schema says more about the answer); ``{}`` when the server takes neither."""
    if server_kind == "vllm":
        if json_schema is not None:
            return {"structured_outputs": {"json": json_schema}}
        return {"structured_outputs": {"grammar": grammar}} if grammar is not None else {}
    if server_kind == "llama.cpp":
        if json_schema is not None:
            return {"json_schema": json_schema}
        return {"grammar": grammar} if grammar is not None else {}
    if server_kind == "openai" and json_schema is not None:
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": str(json_schema.get("title") or "answer"), "schema": json_schema,
            "strict": True}}}
    return {}


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


def check_server_kind(server_kind: str | None, base_url: str | None = None) -> str | None:
    """``server_kind`` if it is one of :data:`SERVER_KINDS` (else :class:`ModelSpecError`);
    unset, ``openai`` for the OpenAI API's base URL and None for any other."""
    if server_kind is None:
        return "openai" if base_url == DEFAULT_BASE_URL else None
    if server_kind not in SERVER_KINDS:
        raise ModelSpecError(
            f"server_kind must be one of {', '.join(SERVER_KINDS)} (where the server reads "
            f"grammars and JSON schemas), not {server_kind!r}")
    return server_kind
