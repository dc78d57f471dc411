"""ChatModel backends over the official ``openai`` client: any OpenAI-compatible server.

``OpenAIChatModel`` calls ``/chat/completions``; ``OpenAICompletionModel`` calls the legacy
``/completions``. Both work with OpenAI, vLLM, Ollama, llama.cpp server and the simulator's
HTTP server. Retries (429, 5xx, timeouts, connection errors; exponential backoff with jitter,
honouring ``retry-after``) are the client's own (``max_retries``); what still fails becomes
:class:`~adapt.errors.ProviderError`. Every request first passes the guard
(:mod:`adapt.llm.guard`).

Clients are shared through a :class:`ClientPool`: one ``AsyncOpenAI`` per
``(base_url, api_key, timeout, max_retries)``, all over one HTTP connection pool (the
``openai`` package's aiohttp client: :func:`adapt.llm.transport.model_http_client`). A model
built without a pool uses the running event loop's default pool (:func:`default_pool`); close
it with :func:`close_default_pool`.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import re
import time
import weakref
from collections.abc import Awaitable, Mapping
from typing import Any, NamedTuple, TypeVar, cast
from urllib.parse import urlsplit

import httpx
import openai
import orjson
from openai import AsyncOpenAI

from adapt.errors import ModelSpecError, ProviderError
from adapt.llm.base import ChatRequest, ChatResponse, Usage
from adapt.llm.gbnf import validate_gbnf
from adapt.llm.guard import check_endpoint, is_loopback
from adapt.llm.transport import HTTPClient, model_http_client

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_API_KEY = "sk-local-no-key-required"  # sent to loopback servers when no key is set
MAX_CONNECTIONS = 256
#: as many as may be open: with many calls in flight, closing the surplus after each answer
#: only meant opening a new connection for the next call (idle ones expire after 5 s)
MAX_KEEPALIVE_CONNECTIONS = MAX_CONNECTIONS

# Reasoning models take max_completion_tokens and only the default temperature.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)(-|$)")

_PoolKey = tuple[str, str, float, int]
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class _Reply(NamedTuple):
    text: str
    usage: Usage | None  # None: the server reported none
    model: str
    finish_reason: str | None


def _refused(exc: BaseException) -> bool:
    """Whether a "timeout" was a connection that failed at once (refused, unreachable). The
    aiohttp adapter of ``openai`` maps every aiohttp connection error to a connect timeout;
    the cause chain still holds the operating system's error, and no timeout."""
    seen: BaseException | None = exc
    refused = False
    for _ in range(8):  # a short chain: openai's error, httpx's, aiohttp's, the OS's
        if seen is None:
            break
        if isinstance(seen, TimeoutError):
            return False
        refused = refused or isinstance(seen, OSError)
        seen = seen.__cause__ or seen.__context__
    return refused


class ClientPool:
    """One ``AsyncOpenAI`` per (base_url, api_key, timeout, max_retries), one HTTP pool.

    Belongs to one event loop (HTTP connections do). ``await pool.aclose()`` closes the HTTP
    connections; the pool can be used again afterwards (it opens a fresh one). Pass
    ``http_client`` to supply your own (e.g. an ``httpx.MockTransport`` in tests); the pool
    then closes it on :meth:`aclose` too.
    """

    def __init__(
        self,
        *,
        http_client: HTTPClient | None = None,
        max_connections: int = MAX_CONNECTIONS,
        max_keepalive_connections: int = MAX_KEEPALIVE_CONNECTIONS,
    ) -> None:
        self._http: HTTPClient | None = http_client
        self._limits = httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max_keepalive_connections,
        )
        self._clients: dict[_PoolKey, AsyncOpenAI] = {}

    def __len__(self) -> int:
        return len(self._clients)

    def get(self, *, base_url: str, api_key: str, timeout: float, max_retries: int) -> AsyncOpenAI:
        """The shared client for these settings, created on first use."""
        if self._http is None or self._http.is_closed:
            self._clients.clear()
            self._http = model_http_client(self._limits)
        key: _PoolKey = (base_url, api_key, float(timeout), int(max_retries))
        client = self._clients.get(key)
        if client is None:
            # ``openai`` >= 2 is typed for httpx2 clients but accepts httpx ones at runtime.
            client = AsyncOpenAI(
                base_url=base_url,
                api_key=api_key,
                timeout=timeout,
                max_retries=max_retries,
                http_client=cast(Any, self._http),
            )
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        """Close the HTTP connections and forget the clients."""
        self._clients.clear()
        http, self._http = self._http, None
        if http is not None and not http.is_closed:
            await http.aclose()


_default_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientPool] = (
    weakref.WeakKeyDictionary()
)


def default_pool() -> ClientPool:
    """The running event loop's shared pool (used by models built without ``pool=``)."""
    loop = asyncio.get_running_loop()
    pool = _default_pools.get(loop)
    if pool is None:
        pool = _default_pools[loop] = ClientPool()
    return pool


async def close_default_pool() -> None:
    """Close the running event loop's default pool, if it has one."""
    pool = _default_pools.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.aclose()


async def closing_default_pool(work: Awaitable[T]) -> T:
    """Await ``work``, then close the running loop's default pool (for ``asyncio.run`` entry
    points: the HTTP client's connections are closed with the loop, not left to the garbage
    collector, which warns about them)."""
    try:
        return await work
    finally:
        await close_default_pool()


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


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The pause a response asks for: ``retry-after-ms``, or ``retry-after`` in seconds or as
    an HTTP date; None when absent or unreadable."""
    raw = headers.get("retry-after-ms")
    if raw is not None:
        try:
            return max(0.0, float(raw) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def estimate_tokens(text: str) -> int:
    """About four characters per token; used when a server reports no usage."""
    return max(1, len(text) // 4) if text else 0


def _provider_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, dict):
            message = message.get("message")
        if message:
            return str(message)
    return str(exc.message)


_HINTS = {
    400: "check the model name and the request parameters",
    401: "check the API key (OPENAI_API_KEY, or ADAPT_OPENAI_API_KEY for the service)",
    403: "the API key may not use this model or project; check the key and its permissions",
    404: "check the model name and that base_url ends in /v1",
    422: "the server rejected the parameters; check the model name and request parameters",
}


#: how an OpenAI-compatible endpoint takes a request's GBNF grammar (``ChatRequest.grammar``):
#: llama.cpp's server reads ``grammar`` in the request body (its README, /completion and the
#: OpenAI-compatible endpoints); vLLM reads ``guided_grammar`` (its "extra parameters",
#: structured outputs; the xgrammar backend accepts GBNF). ``None``: the endpoint is not known
#: to support guided decoding and the grammar is not sent.
GUIDED_DECODING_FIELDS: dict[str, str] = {"llama.cpp": "grammar", "vllm": "guided_grammar"}


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
        guided_decoding: str | None = None,
    ) -> None:
        if not model:
            raise ModelSpecError("model must be a non-empty model name, e.g. 'gpt-4o-mini'")
        self.model = model
        self.name = name or model
        self.simulated = simulated
        env_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        url = base_url or env_url
        self.base_url = validate_base_url(url).rstrip("/")
        #: how errors name the endpoint (the operator's name for it, else its URL)
        self.endpoint = endpoint or self.base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.allow_remote = allow_remote
        check_endpoint(self.base_url, allow_remote=allow_remote, model=model)
        # OPENAI_API_KEY belongs to OPENAI_BASE_URL (or the OpenAI API): never sent elsewhere
        env_key = os.environ.get("OPENAI_API_KEY") if self.base_url == env_url.rstrip("/") \
            else None
        key = api_key or env_key
        if not key:
            if not is_loopback(self.base_url):
                raise ProviderError(
                    f"no API key for {self.base_url} (model {model!r}): set OPENAI_API_KEY "
                    "(or ADAPT_OPENAI_API_KEY for the service), or pass api_key="
                )
            key = LOCAL_API_KEY
        self._api_key = key
        if guided_decoding is not None and guided_decoding not in GUIDED_DECODING_FIELDS:
            raise ModelSpecError(
                f"guided_decoding must be one of {sorted(GUIDED_DECODING_FIELDS)} (the server "
                f"that takes grammars), not {guided_decoding!r}")
        self.guided_decoding = guided_decoding
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
        if usage is None:
            usage = Usage(
                prompt_tokens=estimate_tokens(request.as_prompt()),
                completion_tokens=estimate_tokens(text),
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
        )

    def _provider_error(self, exc: openai.APIError) -> ProviderError:
        """A :class:`ProviderError` whose message names the endpoint and the HTTP status only;
        the upstream body (which a user-chosen endpoint controls) goes to the log alone."""
        where = f"{self.kind} call to endpoint {self.endpoint} (model {self.model!r})"
        retries = f"after {self.max_retries} retries"
        transient, status, retry_after = True, None, None
        if isinstance(exc, openai.APITimeoutError) and not _refused(exc):
            msg = f"{where} timed out ({self.timeout:g}s per attempt) {retries}"
            logged = msg
        elif isinstance(exc, openai.APIConnectionError):
            msg = f"{where} could not connect {retries}; is the server running?"
            logged = f"{msg} ({exc})"
        elif isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            retry_after = retry_after_seconds(exc.response.headers)
            if status == 429 or status >= 500 or status in (408, 409):
                msg = f"{where} failed with HTTP {status} {retries}"
            else:
                transient = False
                hint = _HINTS.get(status, "check the request and the endpoint")
                msg = f"{where} failed with HTTP {status} ({hint})"
            logged = f"{msg}: {_provider_message(exc)}"
        else:
            transient = False
            msg = f"{where} failed ({type(exc).__name__})"
            logged = f"{msg}: {exc}"
        if transient and self.max_retries == 0:  # the caller retries (adapt.llm.retry)
            logger.info("%s", logged)
        else:
            logger.warning("%s", logged)
        return ProviderError(msg, retryable=transient, retry_after=retry_after, status=status)

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
        if request.grammar is not None and self.guided_decoding is not None:
            params["extra_body"] = {
                GUIDED_DECODING_FIELDS[self.guided_decoding]: validate_gbnf(request.grammar)}
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
            path, cast_to=httpx.Response, content=orjson.dumps(params),
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
        params["messages"] = [{"role": m.role, "content": m.content}
                              for m in request.as_messages()]
        data = await self._post(client, "/chat/completions", params)
        choices = data.get("choices")
        if not choices:
            raise ProviderError(
                f"chat call to {self.base_url} (model {self.model!r}) returned no choices"
            )
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") or ""
        return _Reply(text, self._reply_usage(data), data.get("model") or "",
                      choice.get("finish_reason"))


class OpenAICompletionModel(_OpenAIBase):
    """A legacy completions model: ``messages`` are joined into one prompt."""

    kind = "completions"

    async def _send(self, client: AsyncOpenAI, request: ChatRequest) -> _Reply:
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
