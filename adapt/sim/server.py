"""An OpenAI-compatible HTTP API in front of the simulators (Starlette + uvicorn).

Endpoints:

- ``POST /v1/chat/completions``: ``messages`` are joined into one prompt exactly like
  ``ChatRequest.as_prompt`` (contents of system/developer, user and assistant messages, in
  order, separated by a blank line), so a chat request whose single user message is the prompt
  gives the same output as a completion request with that prompt. With ``tools`` (and the
  ``tool`` messages that answer earlier calls) the simulator answers with ``tool_calls``; with
  a JSON schema (``response_format``, ``structured_outputs.json`` or ``json_schema``) a
  planner answers with a JSON plan (``adapt.sim.structured``).
- ``POST /v1/completions``: ``prompt`` is a string or a list of one string.
- ``GET /v1/models``, ``GET /v1/models/{model}``: the simulators' default specs.
- ``GET /_sim/log``: the bounded request log and counters; ``POST /_sim/reset`` clears both
  and restarts the fault-injection random sequence.

The ``model`` field is a simulator spec (``sim:textcraft?capability=2``; ``sim:`` optional).
``stop`` (string or list) cuts the output at the first occurrence (``finish_reason`` ``stop``);
``max_tokens`` (or ``max_completion_tokens``) truncates at about 4 characters per token
(``finish_reason`` ``length``). A missing ``temperature`` counts as 0. ``stream: true`` is
refused. Errors use OpenAI's shape ``{"error": {"message", "type", "param", "code"}}``.

Fault injection for load tests: ``latency`` seconds are awaited per completion request, and a
seeded fraction ``error_rate`` of completion requests is answered 429 or 500.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import random
import socket
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adapt.errors import InvalidConfig, ModelSpecError
from adapt.llm.base import ChatModel, ChatRequest, Message
from adapt.llm.openai_compat.wire import WireError, read_messages, read_tools, tool_calls_wire
from adapt.sim.registry import SIMULATORS, from_spec, is_known_simulator

logger = logging.getLogger(__name__)

#: ``max_tokens`` when the request gives none
UNLIMITED_TOKENS = 1 << 20
#: model objects kept per spec string
MODEL_CACHE_SIZE = 256


class ApiError(Exception):
    """An error answered with OpenAI's error JSON."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param
        self.headers = headers

    def response(self) -> JSONResponse:
        body = {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }
        return JSONResponse(body, status_code=self.status, headers=self.headers)


@dataclass(frozen=True, slots=True)
class _Call:
    model: ChatModel
    request: ChatRequest


class SimService:
    """State of one app: model cache, fault injection, request log."""

    def __init__(self, latency: float, error_rate: float, seed: int, log_size: int,
                 retry_after: float | None = None) -> None:
        if not math.isfinite(latency) or latency < 0:
            raise InvalidConfig(f"latency must be >= 0 seconds, got {latency!r}")
        if not 0.0 <= error_rate <= 1.0:
            raise InvalidConfig(f"error_rate must be between 0 and 1, got {error_rate!r}")
        if log_size < 1:
            raise InvalidConfig(f"log_size must be >= 1, got {log_size!r}")
        self.latency = latency
        self.error_rate = error_rate
        self.retry_after = retry_after
        self.seed = seed
        self.models: dict[str, ChatModel] = {}
        self.log: deque[dict[str, Any]] = deque(maxlen=log_size)
        self.counters: Counter[str] = Counter()
        self._faults = random.Random(seed)

    def reset(self) -> None:
        self.log.clear()
        self.counters.clear()
        self._faults = random.Random(self.seed)

    # -- model lookup ----------------------------------------------------------------------
    def model(self, spec: object) -> ChatModel:
        if not isinstance(spec, str) or not spec.strip():
            raise ApiError(400, "you must provide a model parameter", param="model")
        cached = self.models.get(spec)
        if cached is not None:
            return cached
        if not is_known_simulator(spec):
            raise ApiError(
                404,
                f"The model {spec!r} does not exist; available simulators: "
                + ", ".join(s.default_spec for s in SIMULATORS.values()),
                code="model_not_found",
                param="model",
            )
        try:
            model = from_spec(spec)
        except ModelSpecError as exc:
            raise ApiError(400, str(exc), code="invalid_model_spec", param="model") from None
        if len(self.models) >= MODEL_CACHE_SIZE:
            self.models.pop(next(iter(self.models)))  # drop the oldest
        self.models[spec] = model
        return model

    # -- faults and log --------------------------------------------------------------------
    def injected_fault(self) -> ApiError | None:
        if self.error_rate <= 0 or self._faults.random() >= self.error_rate:
            return None
        self.counters["injected_errors"] += 1
        if self._faults.random() < 0.5:
            return ApiError(
                429,
                "Rate limit reached (injected by the simulator)",
                type_="requests",
                code="rate_limit_exceeded",
                headers=None if self.retry_after is None else {
                    "retry-after": f"{self.retry_after:g}"},
            )
        return ApiError(
            500, "Internal server error (injected by the simulator)", type_="server_error"
        )

    def record(
        self, model: str | None, kind: str, prompt: str | None, completion: str | None, status: int
    ) -> None:
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest() if prompt is not None else None
        self.log.append(
            {
                "model": model,
                "kind": kind,
                "prompt_sha256": digest,
                "completion": completion,
                "status": status,
            }
        )
        self.counters["requests"] += 1
        self.counters[f"status_{status}"] += 1
        self.counters[f"kind_{kind}"] += 1


# -- request parsing ---------------------------------------------------------------------------
async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(
            400, "We could not parse the JSON body of your request.", code="invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.", code="invalid_json")
    return body


def _messages(body: dict[str, Any]) -> list[Message]:
    try:
        return read_messages(body.get("messages"))
    except WireError as exc:
        raise ApiError(400, str(exc), param=exc.param) from None


def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    try:
        return read_tools(body.get("tools"))
    except WireError as exc:
        raise ApiError(400, str(exc), param=exc.param) from None


def _json_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """A JSON schema in any server kind's field: OpenAI's ``response_format`` (and its
    ``json_object`` form with a ``schema``), vLLM's ``structured_outputs.json``, llama.cpp's
    ``json_schema``."""
    response_format = body.get("response_format")
    structured = body.get("structured_outputs")
    found: object = None
    if isinstance(response_format, dict):
        inner = response_format.get("json_schema")
        found = inner.get("schema") if isinstance(inner, dict) else response_format.get("schema")
    if found is None and isinstance(structured, dict):
        found = structured.get("json")
    if found is None:
        found = body.get("json_schema")
    return found if isinstance(found, dict) else None


def _prompt(body: dict[str, Any]) -> str:
    raw = body.get("prompt")
    if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], str):
        return raw[0]
    if isinstance(raw, str):
        return raw
    raise ApiError(
        400,
        "'prompt' must be a string or a list of one string (batches are not supported)",
        param="prompt",
    )


def _stop(body: dict[str, Any]) -> list[str]:
    raw = body.get("stop")
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and all(isinstance(s, str) for s in raw):
        return [s for s in raw if s]
    raise ApiError(400, "'stop' must be a string or a list of strings", param="stop")


def _max_tokens(body: dict[str, Any]) -> int:
    for key in ("max_tokens", "max_completion_tokens"):
        raw = body.get(key)
        if raw is None:
            continue
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
            raise ApiError(400, f"'{key}' must be a positive integer", param=key)
        return raw
    return UNLIMITED_TOKENS


def _temperature(body: dict[str, Any]) -> float:
    raw = body.get("temperature")
    if raw is None:
        return 0.0
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 2:
        raise ApiError(400, "'temperature' must be a number between 0 and 2", param="temperature")
    return float(raw)


def _build_call(service: SimService, body: dict[str, Any], kind: str) -> _Call:
    if body.get("stream"):
        raise ApiError(
            400,
            "Streaming is not supported by the adapt simulator; send stream: false.",
            code="unsupported_parameter",
            param="stream",
        )
    model = service.model(body.get("model"))
    common: dict[str, Any] = {
        "stop": _stop(body),
        "max_tokens": _max_tokens(body),
        "temperature": _temperature(body),
        "role": "http",
    }
    if kind == "chat":
        request = ChatRequest(messages=_messages(body), tools=_tools(body),
                              json_schema=_json_schema(body), **common)
    else:
        request = ChatRequest(prompt=_prompt(body), **common)
    return _Call(model, request)


# -- responses ---------------------------------------------------------------------------------
def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


async def _serve_completion(service: SimService, request: Request, kind: str) -> JSONResponse:
    prompt: str | None = None
    model_name: str | None = None
    try:
        body = await _json_body(request)
        raw_model = body.get("model")
        model_name = raw_model if isinstance(raw_model, str) else None
        call = _build_call(service, body, kind)
        prompt = call.request.as_prompt()
        if service.latency > 0:
            await asyncio.sleep(service.latency)
        fault = service.injected_fault()
        if fault is not None:
            raise fault
        response = await call.model.complete(call.request)
    except ApiError as exc:
        service.record(model_name, kind, prompt, None, exc.status)
        logger.debug("%s request failed: %s %s", kind, exc.status, exc.message)
        return exc.response()
    except Exception:  # the simulator itself broke: report like a provider would
        logger.exception("simulator failed on a %s request", kind)
        service.record(model_name, kind, prompt, None, 500)
        return ApiError(500, "The simulator failed.", type_="server_error").response()
    service.record(call.model.name, kind, prompt, response.text, 200)
    finish = response.finish_reason or "stop"
    usage = _usage(response.usage.prompt_tokens, response.usage.completion_tokens)
    created = int(time.time())
    if kind == "chat":
        message: dict[str, Any] = {"role": "assistant", "content": response.text,
                                   "refusal": None}
        if response.tool_calls:
            message.update(content=response.text or None,
                           tool_calls=tool_calls_wire(response.tool_calls))
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": finish,
        }
        payload = {
            "id": f"chatcmpl-sim-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": created,
            "model": call.model.name,
            "choices": [choice],
            "usage": usage,
            "system_fingerprint": "adapt-sim",
        }
    else:
        choice = {"index": 0, "text": response.text, "logprobs": None, "finish_reason": finish}
        payload = {
            "id": f"cmpl-sim-{uuid.uuid4().hex[:24]}",
            "object": "text_completion",
            "created": created,
            "model": call.model.name,
            "choices": [choice],
            "usage": usage,
        }
    return JSONResponse(payload)


def _model_card(spec: str) -> dict[str, Any]:
    return {"id": spec, "object": "model", "created": 0, "owned_by": "adapt-sim"}


def create_app(
    latency: float = 0.0, error_rate: float = 0.0, seed: int = 0, *, log_size: int = 10_000,
    retry_after: float | None = None,
) -> Starlette:
    """The simulator HTTP app. ``latency``: seconds awaited per completion request;
    ``error_rate``: seeded fraction of completion requests answered 429 or 500;
    ``retry_after``: seconds an injected 429 asks the client to wait (``Retry-After``)."""
    service = SimService(latency, error_rate, seed, log_size, retry_after)

    async def chat(request: Request) -> JSONResponse:
        return await _serve_completion(service, request, "chat")

    async def completions(request: Request) -> JSONResponse:
        return await _serve_completion(service, request, "completion")

    async def models(request: Request) -> JSONResponse:
        data = [_model_card(s.default_spec) for s in SIMULATORS.values()]
        return JSONResponse({"object": "list", "data": data})

    async def model(request: Request) -> JSONResponse:
        spec = str(request.path_params["model"])
        try:
            found = service.model(spec)
        except ApiError as exc:
            return exc.response()
        return JSONResponse(_model_card(found.name))

    async def log(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "counters": dict(service.counters),
                "size": len(service.log),
                "capacity": service.log.maxlen,
                "entries": list(service.log),
            }
        )

    async def reset(request: Request) -> JSONResponse:
        service.reset()
        return JSONResponse({"ok": True})

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        status = getattr(exc, "status_code", 500)
        detail = getattr(exc, "detail", "error")
        message = f"{detail}: {request.method} {request.url.path}"
        return ApiError(status, message, code="not_found" if status == 404 else None).response()

    app = Starlette(
        exception_handlers={404: http_error, 405: http_error},
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model, methods=["GET"]),
            Route("/_sim/log", log, methods=["GET"]),
            Route("/_sim/reset", reset, methods=["POST"]),
        ],
    )
    app.state.sim = service
    return app


def serve(
    host: str = "127.0.0.1",
    port: int = 8001,
    latency: float = 0.0,
    error_rate: float = 0.0,
    seed: int = 0,
) -> None:
    """Run the simulator API with uvicorn until interrupted."""
    app = create_app(latency=latency, error_rate=error_rate, seed=seed)
    logger.info(
        "simulator API on http://%s:%d/v1 (latency %.3gs, error rate %.3g, seed %d)",
        host,
        port,
        latency,
        error_rate,
        seed,
    )
    uvicorn.run(app, host=host, port=port, log_level="info")


@contextmanager
def serve_in_thread(app: Any, *, host: str = "127.0.0.1", port: int = 0,
                    lifespan: Literal["on", "off"] = "off", name: str = "adapt-server"
                    ) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn in a daemon thread (``port=0``: a free port);
    yields ``http://host:port``. The server stops when the block exits."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted connections inherit this; without it keep-alive requests stall ~40 ms each
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name,
                              daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10.0
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start")
            time.sleep(0.005)
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10.0)
        sock.close()


@contextmanager
def background_server(
    app: Starlette | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Serve ``app`` (default: ``create_app()``) with uvicorn in a daemon thread, for tests.

    Yields the OpenAI base URL (``http://127.0.0.1:<port>/v1``); ``port=0`` picks a free port.
    The server stops when the block exits.
    """
    with serve_in_thread(app or create_app(), host=host, port=port,
                         name="adapt-sim-server") as url:
        yield f"{url}/v1"
