"""Model spec strings: one string picks a backend, a model and (optionally) an endpoint.

Grammar::

    openai:<model>[@<base_url>]              chat completions (e.g. openai:gpt-4o-mini)
    openai-completions:<model>[@<base_url>]  legacy completions
    sim:<name>[?knob=value&...]              the in-process simulator (adapt.sim.from_spec)
    local:<name-or-.gguf>[?n_ctx=N&threads=N&seed=N]  a GGUF model in-process (llama.cpp)
    script:<JSON>                            answers written in advance (adapt.llm.script)
    script:@<file.json>                      the same, read from a file (command line only)

The model itself may contain ``:``, ``?`` and ``@`` (``openai:sim:textcraft?capability=1``), so
the base URL is split off at the **last** ``@http`` (``@http://`` or ``@https://``; anything
else starting ``@http`` is reported as a malformed base URL). Without a base URL the
caller's default applies (settings), else ``OPENAI_BASE_URL``, else the OpenAI API.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, ConfigDict

from adapt.errors import ModelSpecError
from adapt.llm.base import ChatModel
from adapt.llm.local import LocalLlamaModel, parse_local_spec
from adapt.llm.openai_compat.endpoint import validate_base_url
from adapt.llm.openai_compat.models import OpenAIChatModel, OpenAICompletionModel
from adapt.llm.openai_compat.pool import ClientPool

logger = logging.getLogger(__name__)

Backend = Literal["openai", "openai-completions", "sim", "local", "script"]

BACKENDS: dict[str, str] = {
    "openai": "openai:gpt-4o-mini, openai:llama3@http://127.0.0.1:11434/v1",
    "openai-completions": "openai-completions:gpt-3.5-turbo-instruct",
    "sim": "sim:textcraft?capability=1",
    "local": "local:smollm2?n_ctx=4096&threads=2",
    "script": 'script:["look", "think: Task completed!"]',
}


def _valid_backends() -> str:
    return "; ".join(f"{name}: (e.g. {example})" for name, example in BACKENDS.items())


class ModelSpec(BaseModel):
    """A parsed spec. ``str(spec)`` gives the spec string back."""

    model_config = ConfigDict(frozen=True)

    backend: Backend
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        at = f"@{self.base_url}" if self.base_url else ""
        return f"{self.backend}:{self.model}{at}"

    @property
    def simulated(self) -> bool:
        """True for ``sim:`` and ``script:`` specs and for simulator models served over HTTP
        (``sim:...``)."""
        return self.backend in ("sim", "script") or self.model.startswith("sim:")


def _split_base_url(rest: str) -> tuple[str, str | None]:
    cut = rest.lower().rfind("@http")  # also catches typos such as "@http:/host", "@https:"
    if cut < 0:
        return rest, None
    return rest[:cut], rest[cut + 1 :]


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``spec``; raise :class:`~adapt.errors.ModelSpecError` saying what to fix."""
    text = spec.strip() if isinstance(spec, str) else ""
    if not text:
        raise ModelSpecError(f"empty model spec; valid backends: {_valid_backends()}")
    backend, sep, rest = text.partition(":")
    backend = backend.strip().lower()
    if not sep or backend not in BACKENDS:
        hint = f"; did you mean 'openai:{text}'?" if not sep else ""
        raise ModelSpecError(
            f"unknown model backend {backend!r} in spec {text!r}{hint}; "
            f"valid backends: {_valid_backends()}"
        )
    if backend == "sim":
        if not rest.strip():
            raise ModelSpecError(f"missing simulator name in {text!r}; e.g. {BACKENDS['sim']}")
        model, base_url = _split_base_url(rest)
        if base_url is not None:
            raise ModelSpecError(
                f"{text!r}: sim: models run in-process and take no base_url; to reach the "
                f"simulator over HTTP use 'openai:sim:{model}@{base_url}'"
            )
        return ModelSpec(backend="sim", model=rest.strip())
    if backend == "script":
        from adapt.llm.script import parse_script

        text = rest.strip()
        if text.startswith("@"):  # a file: read (and checked) when the model is built
            return ModelSpec(backend="script", model=text)
        return ModelSpec(backend="script", model=parse_script(text).canonical())
    if backend == "local":
        model, base_url = _split_base_url(rest)
        if base_url is not None:
            raise ModelSpecError(
                f"{text!r}: local: models run in-process and take no base_url; to use a "
                f"model served by `adapt llm serve` write "
                f"'openai-completions:smollm2@{base_url}'"
            )
        parse_local_spec(rest)  # options are checked now; the weights only when loaded
        return ModelSpec(backend="local", model=rest.strip())
    model, base_url = _split_base_url(rest)
    model = model.strip()
    if not model:
        raise ModelSpecError(f"missing model name in {text!r}; e.g. {BACKENDS[backend]}")
    if model.endswith("@"):
        raise ModelSpecError(
            f"malformed base_url in {text!r}: nothing usable after '@'; "
            "write <model>@http://HOST:PORT/v1"
        )
    if base_url is not None:
        base_url = validate_base_url(base_url.strip())
    return ModelSpec(
        backend="openai" if backend == "openai" else "openai-completions",
        model=model,
        base_url=base_url,
    )


def is_simulated(spec: str) -> bool:
    """True when ``spec`` names a simulator (in-process, or served over HTTP as ``sim:...``)."""
    return parse_model_spec(spec).simulated


def load_model(
    spec: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 3,
    allow_remote: bool = False,
    pool: ClientPool | None = None,
    guided_decoding: str | None = None,
    server_kind: str | None = None,
) -> ChatModel:
    """Build the ChatModel ``spec`` names.

    ``base_url`` is the default endpoint (from settings); a base URL in the spec wins. Remote
    endpoints need ``allow_remote=True`` (see :mod:`adapt.llm.guard`). Models of one ``pool``
    share connections. ``server_kind`` (``openai``, ``vllm`` or ``llama.cpp``; its older name
    ``guided_decoding``): where the OpenAI-compatible endpoint reads grammars and JSON schemas
    (see ``adapt.llm.openai_compat.endpoint.SERVER_KINDS``).
    """
    parsed = parse_model_spec(spec)
    if parsed.backend == "sim":
        from adapt.sim import from_spec  # lazy: real-model users never load the simulator

        return from_spec(str(parsed))
    if parsed.backend == "script":
        from adapt.llm.script import ScriptModel

        return ScriptModel.from_spec(parsed.model, allow_files=True)
    if parsed.backend == "local":
        return LocalLlamaModel.from_spec(parsed.model)
    cls = OpenAIChatModel if parsed.backend == "openai" else OpenAICompletionModel
    logger.debug("loading %s", parsed)
    return cls(
        parsed.model,
        base_url=parsed.base_url or base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        allow_remote=allow_remote,
        simulated=parsed.simulated,
        pool=pool,
        server_kind=server_kind or guided_decoding,
    )
