"""The ChatModel backends over the official ``openai`` client: any OpenAI-compatible server.

``OpenAIChatModel`` calls ``/chat/completions``; ``OpenAICompletionModel`` calls the legacy
``/completions``. Both work with OpenAI, vLLM, Ollama, llama.cpp server and the simulator's
HTTP server. Retries (429, 5xx, timeouts, connection errors; exponential backoff with jitter,
honouring ``retry-after``) are the client's own (``max_retries``); what still fails becomes
:class:`~adapt.errors.ProviderError` (:mod:`.errors`). Every request first passes the guard
(:mod:`adapt.llm.guard`); the endpoint, its key and its grammar field come from
:mod:`.endpoint`, the client from a :class:`~.pool.ClientPool`.
"""

from __future__ import annotations

import logging
import re
import time
import weakref
from typing import Any, NamedTuple

import httpx
import openai
import orjson
from openai import AsyncOpenAI

from adapt.errors import ModelSpecError, ProviderError, UserError
from adapt.llm.base import ChatRequest, ChatResponse, ToolCall, Usage
from adapt.llm.gbnf import validate_gbnf
from adapt.llm.guard import check_endpoint
from adapt.llm.openai_compat.endpoint import (
    check_server_kind,
    endpoint_key,
    endpoint_url,
    structured_fields,
)
from adapt.llm.openai_compat.errors import provider_error
from adapt.llm.openai_compat.pool import ClientPool, default_pool
from adapt.llm.openai_compat.wire import WireError, message_wire, read_tool_calls
from adapt.llm.transport import HTTPClient

logger = logging.getLogger(__name__)

# Reasoning models take max_completion_tokens and only the default temperature.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)(-|$)")

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def estimate_tokens(text: str) -> int:
    """About four characters per token; used when a server reports no usage."""
    return max(1, len(text) // 4) if text else 0


class _Reply(NamedTuple):
    text: str
    usage: Usage | None  # None: the server reported none
    model: str
    finish_reason: str | None
    tool_calls: list[ToolCall] | None = None


#: each client's absolute URL of each path, with the base URL it was made from
_URLS: weakref.WeakKeyDictionary[AsyncOpenAI, tuple[object, dict[str, str]]] = (
    weakref.WeakKeyDictionary())


def _absolute_url(client: AsyncOpenAI, path: str) -> str:
    """``path`` joined to the client's base URL as the client joins it (``_prepare_url``),
    once per client and path: handed a relative path, the client parses it and copies its
    base URL with the joined path on every request (about 4 % of a worker's CPU per LLM
    call); an absolute URL it only parses."""
    base = client.base_url
    entry = _URLS.get(client)
    if entry is None or entry[0] is not base:
        entry = _URLS[client] = (base, {})
    url = entry[1].get(path)
    if url is None:
        url = entry[1][path] = str(base.copy_with(raw_path=base.raw_path + path.lstrip("/").encode()))
    return url


class _OpenAIBase:
    """Shared construction, guard, retries and error mapping of the two backends."""

    kind = "chat"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        allow_remote: bool = False,
        simulated: bool = False,
        pool: ClientPool | None = None,
        http_client: HTTPClient | None = None,
        name: str | None = None,
        endpoint: str | None = None,
        server_kind: str | None = None,
        guided_decoding: str | None = None,
    ) -> None:
        if not model:
            raise ModelSpecError("model must be a non-empty model name, e.g. 'gpt-4o-mini'")
        self.model = model
        self.name = name or model
        self.simulated = simulated
        self.base_url = endpoint_url(base_url)
        #: how errors name the endpoint (the operator's name for it, else its URL)
        self.endpoint = endpoint or self.base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.allow_remote = allow_remote
        check_endpoint(self.base_url, allow_remote=allow_remote, model=model)
        self._api_key = endpoint_key(self.base_url, api_key, model)
        #: what the server is (``adapt.llm.openai_compat.endpoint.SERVER_KINDS``): where it
        #: reads grammars and JSON schemas; ``guided_decoding`` is its older name
        self.server_kind = check_server_kind(server_kind or guided_decoding, self.base_url)
        self._pool = ClientPool(http_client=http_client) if http_client is not None else pool

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _client(self) -> AsyncOpenAI:
        pool = self._pool if self._pool is not None else default_pool()
        return pool.get(
            base_url=self.base_url,
            api_key=self._api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    async def _send(self, client: AsyncOpenAI, request: ChatRequest) -> _Reply:
        raise NotImplementedError

    async def complete(self, request: ChatRequest) -> ChatResponse:
        # Checked on every call too: forbid_remote() may have been called since construction.
        check_endpoint(self.base_url, allow_remote=self.allow_remote, model=self.model)
        client = self._client()
        start = time.perf_counter()
        try:
            reply = await self._send(client, request)
        except openai.APIError as exc:
            raise self._provider_error(exc) from exc
        latency = time.perf_counter() - start
        # NUL and lone surrogates cannot be stored (PostgreSQL): replaced before anyone sees
        # them, so a resumed run replays exactly what the engine saw
        text, usage = _UNSTORABLE.sub("\ufffd", reply.text), reply.usage
        calls = None if reply.tool_calls is None else [
            c.model_copy(update={"name": _UNSTORABLE.sub("\ufffd", c.name),
                                 "arguments": _UNSTORABLE.sub("\ufffd", c.arguments)})
            for c in reply.tool_calls]
        if usage is None:
            written = text + "".join(c.name + c.arguments for c in calls or ())
            offered = orjson.dumps(request.tools).decode() if request.tools else ""
            usage = Usage(
                prompt_tokens=estimate_tokens(request.as_prompt() + offered),
                completion_tokens=estimate_tokens(written),
                estimated=True,
            )
        logger.debug(
            "%s %s: %d+%d tokens in %.3fs (%s)",
            self.kind,
            self.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            latency,
            request.role,
        )
        return ChatResponse(
            text=text,
            usage=usage,
            latency_s=latency,
            model=reply.model or self.model,
            simulated=self.simulated,
            finish_reason=reply.finish_reason,
            tool_calls=calls,
        )

    def _provider_error(self, exc: openai.APIError) -> ProviderError:
        """What ``exc`` becomes (:func:`~adapt.llm.openai_compat.errors.provider_error`)."""
        return provider_error(exc, kind=self.kind, endpoint=self.endpoint, model=self.model,
                              timeout=self.timeout, max_retries=self.max_retries)

    def _common_params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model}
        if self.kind == "chat" and _REASONING_MODEL.match(self.model):
            params["max_completion_tokens"] = request.max_tokens
        else:
            params["max_tokens"] = request.max_tokens
            params["temperature"] = request.temperature
        if request.stop:
            params["stop"] = list(request.stop)
        if request.seed is not None:
            params["seed"] = request.seed
        grammar = request.grammar
        if grammar is not None and self.server_kind in ("vllm", "llama.cpp"):
            validate_gbnf(grammar)  # a malformed grammar never leaves the process
        extra = structured_fields(self.server_kind, grammar=grammar,
                                  json_schema=request.json_schema)
        if extra:
            params["extra_body"] = extra
        return params


    async def _post(self, client: AsyncOpenAI, path: str, params: dict[str, Any]
                    ) -> dict[str, Any]:
        """POST ``params`` to ``path`` through the client's own request machinery (auth,
        headers, timeouts, retries, errors) but on its raw path: the body serialised once
        with orjson, the answer returned as the raw HTTP response and parsed with orjson.
        ``chat.completions.create`` spent about 1 ms of CPU per call transforming the
        parameters and building typed response objects that are read once and dropped
        (``python -m benchmarks.overhead --http`` measures both)."""
        extra = params.pop("extra_body", None)
        if extra:
            params.update(extra)
        response = await client.post(
            _absolute_url(client, path), cast_to=httpx.Response, content=orjson.dumps(params),
            options={"headers": {"Content-Type": "application/json"}})
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise ProviderError(f"{self.kind} call to endpoint {self.endpoint} (model "
                                f"{self.model!r}) answered with a body that is not JSON",
                                status=response.status_code) from None
        if not isinstance(data, dict):
            data = {}
        return data

    def _reply_usage(self, data: dict[str, Any]) -> Usage | None:
        usage = data.get("usage")
        if not isinstance(usage, dict):
            return None
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if prompt is None and completion is None:
            return None
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return Usage(prompt_tokens=int(prompt or 0), completion_tokens=int(completion or 0),
                     cached_tokens=int(cached or 0))


class OpenAIChatModel(_OpenAIBase):
    """A chat-completions model: a ``prompt`` request is sent as one user message.

    Reasoning models (``o1``, ``o3-mini``, ``gpt-5``...) get ``max_completion_tokens`` and no
    ``temperature``, which they reject.
    """

    kind = "chat"

    async def _send(self, client: AsyncOpenAI, request: ChatRequest) -> _Reply:
        params = self._common_params(request)
        params["messages"] = [message_wire(m) for m in request.as_messages()]
        if request.tools:
            params["tools"] = request.tools
        if request.tool_choice is not None:
            params["tool_choice"] = request.tool_choice
        data = await self._post(client, "/chat/completions", params)
        choices = data.get("choices")
        if not choices:
            raise ProviderError(
                f"chat call to {self.base_url} (model {self.model!r}) returned no choices"
            )
        choice = choices[0]
        message = choice.get("message") or {}
        try:
            calls = read_tool_calls(message.get("tool_calls"), "message.tool_calls")
        except WireError as exc:
            raise ProviderError(f"chat call to endpoint {self.endpoint} (model {self.model!r}) "
                                f"answered with malformed tool calls ({exc})") from None
        return _Reply(message.get("content") or "", self._reply_usage(data),
                      data.get("model") or "", choice.get("finish_reason"), calls)


class OpenAICompletionModel(_OpenAIBase):
    """A legacy completions model: ``messages`` are joined into one prompt."""

    kind = "completions"

    async def _send(self, client: AsyncOpenAI, request: ChatRequest) -> _Reply:
        if request.tools:
            raise UserError(
                f"{self.name} is a completions model (openai-completions:), which cannot call "
                "tools; the tools executor needs a chat model (openai:<model>) or a local: one")
        params = self._common_params(request)
        params["prompt"] = request.as_prompt()
        data = await self._post(client, "/completions", params)
        choices = data.get("choices")
        if not choices:
            raise ProviderError(
                f"completions call to {self.base_url} (model {self.model!r}) returned no choices"
            )
        choice = choices[0]
        return _Reply(choice.get("text") or "", self._reply_usage(data), data.get("model") or "",
                      choice.get("finish_reason"))

    async def score(self, prompt: str, continuation: str) -> list[float] | None:
        """The log-probabilities of ``continuation``'s tokens after ``prompt`` (PASS's logprob
        rule), or ``None`` when the server does not return them.

        One legacy completions call with ``echo=True, max_tokens=0, logprobs=0``: the server
        scores the text it is sent. The tokens that end inside ``continuation`` are kept (a
        token spanning the boundary counts as the continuation's). Errors are logged and give
        ``None``: scoring is an optional capability, not worth failing a task for.
        """
        check_endpoint(self.base_url, allow_remote=self.allow_remote, model=self.model)
        text = prompt + continuation
        params: dict[str, Any] = {"model": self.model, "prompt": text, "echo": True,
                                  "max_tokens": 0, "logprobs": 0, "temperature": 0.0}
        try:
            response = await self._client().completions.create(**params)
        except openai.APIError as exc:
            self._provider_error(exc)  # logs the failure
            return None
        logprobs = response.choices[0].logprobs if response.choices else None
        if logprobs is None or not logprobs.tokens or logprobs.token_logprobs is None \
                or logprobs.text_offset is None:
            return None
        out: list[float] = []
        boundary = len(prompt)
        for token, offset, value in zip(logprobs.tokens, logprobs.text_offset,
                                        logprobs.token_logprobs, strict=False):
            if offset + len(token) <= boundary or offset >= len(text):
                continue
            if value is None:
                return None
            out.append(float(value))
        return out or None
