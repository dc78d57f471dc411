"""The one place models are built from settings: the API's submit validation, the workers and
the CLI all use :class:`ModelFactory`.

It holds the operator's endpoint allow-list (:mod:`adapt.llm.endpoints`): an ``openai:`` spec
may only name a listed base URL, and gets only that endpoint's key. The service builds it with
``operator=False`` (nothing implicit: no loopback, ``local:`` only bundled models or files in
``ADAPT_MODELS_DIR``); the ``adapt run`` / ``adapt bench`` CLI, run by the operator, builds it
with ``operator=True`` (any loopback endpoint, any ``.gguf`` path).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapt.errors import ModelSpecError
from adapt.llm.base import ChatModel
from adapt.llm.endpoints import Endpoint, EndpointList
from adapt.llm.guard import refusal_reason, remote_forbidden
from adapt.llm.openai_compat.endpoint import DEFAULT_BASE_URL
from adapt.llm.openai_compat.models import OpenAIChatModel, OpenAICompletionModel
from adapt.llm.openai_compat.pool import ClientPool
from adapt.llm.spec import ModelSpec, parse_model_spec
from adapt.settings import Settings

#: sent to endpoints configured without a key (the openai client needs a non-empty one)
NO_KEY = "sk-no-key-configured"
OPENAI_ENDPOINT = "openai"


@dataclass(frozen=True)
class ModelChoice:
    """A checked spec: its canonical string and whether it is simulated."""

    spec: str
    simulated: bool


def endpoint_list(settings: Settings, *, operator: bool) -> EndpointList:
    """The endpoints ``settings`` allow (the OpenAI one once its key or base URL is set)."""
    endpoints: list[Endpoint] = []
    if settings.openai_api_key or settings.openai_base_url:
        endpoints.append(Endpoint(OPENAI_ENDPOINT, settings.openai_base_url or DEFAULT_BASE_URL,
                                  settings.openai_api_key, settings.openai_server_kind))
    for i, e in enumerate(settings.llm_endpoints):
        key = e.api_key.get_secret_value() if e.api_key is not None else None
        endpoints.append(Endpoint(e.name or f"endpoint-{i + 1}", e.base_url, key,
                                  e.server_kind))
    return EndpointList(tuple(endpoints), default=OPENAI_ENDPOINT, allow_loopback=operator)


def _check_simulator(spec: ModelSpec) -> None:
    from adapt.sim.registry import get_simulator
    from adapt.sim.spec import parse_knobs, split_spec

    name, pairs = split_spec(spec.model)
    simulator = get_simulator(name)
    parse_knobs(simulator.name, simulator.knobs, pairs)


def played_game(environment: str) -> str:
    """The game ``environment`` plays, which a simulator is matched on: an AgentGym server's
    family (``textcraft-gym`` registered with family ``textcraft`` plays TextCraft, with its
    prompts), else the environment's name."""
    from adapt.envs.registry import remote_entries

    entry = remote_entries().get(environment)
    loaded = entry.loaded() if entry is not None else None
    family = getattr(loaded, "family", None)
    name = getattr(family, "name", None)
    return name if isinstance(name, str) else environment


def check_plays(spec: str, environment: str) -> None:
    """Raise ``ModelSpecError`` when ``spec`` names a simulator (in process, or served over
    HTTP as ``openai:sim:...``) that cannot play ``environment``: it would answer nonsense
    and the task would fail for no reason the user can see."""
    from adapt.sim.registry import SIMULATORS
    from adapt.sim.spec import split_spec

    parsed = parse_model_spec(spec)
    if parsed.backend != "sim" and not parsed.model.startswith("sim:"):
        return
    simulator = SIMULATORS.get(split_spec(parsed.model)[0])
    if simulator is None or not simulator.environments or (
            played_game(environment) in simulator.environments):
        return
    from adapt.llm.script import EXAMPLE

    raise ModelSpecError(
        f"the simulated model 'sim:{simulator.name}' plays only "
        f"{', '.join(simulator.environments)}, not {environment!r}; to run {environment!r} "
        f"offline name a script: model (answers written in advance), e.g. {EXAMPLE}, or a "
        "real model (openai:<model>, local:<model>)")


class ModelFactory:
    """Checks and builds models from spec strings, with the operator's settings."""

    def __init__(self, settings: Settings, *, operator: bool = False,
                 pool: ClientPool | None = None, client_retries: int | None = None) -> None:
        self.settings = settings
        self.operator = operator
        self.pool = pool
        #: retries inside the HTTP client (None: ``llm_max_retries``; the service passes 0
        #: and retries itself, see ``adapt.llm.retry``)
        self.client_retries = client_retries
        self.endpoints = endpoint_list(settings, operator=operator)

    def endpoint(self, spec: ModelSpec) -> Endpoint:
        endpoint = self.endpoints.resolve(spec.base_url)
        reason = refusal_reason(endpoint.base_url, allow_remote=self.settings.allow_remote_llm,
                                forbidden=remote_forbidden(), model=spec.model)
        if reason is not None:
            raise ModelSpecError(reason)
        return endpoint

    def _local_model(self, spec: ModelSpec) -> str:
        """The ``local:`` model text to load; in the service only a bundled model or a
        ``.gguf`` inside ``models_dir``, and only with the extra installed."""
        from adapt.llm.local import BUNDLED, parse_local_spec, require_llama_cpp

        name, _ = parse_local_spec(spec.model)
        if self.operator:
            return spec.model
        require_llama_cpp()
        if name.lower() in BUNDLED:
            return spec.model
        root = self.settings.models_dir
        hint = (f"bundled: {', '.join(sorted(BUNDLED))}" + (
            f"; or a .gguf file in the server's models folder {root}" if root else
            "; the operator may allow .gguf files from a folder with ADAPT_MODELS_DIR"))
        path = Path(name)
        if root is None or path.suffix.lower() != ".gguf":
            raise ModelSpecError(f"local model {name!r} is not allowed on this server ({hint})")
        base = root.resolve()
        target = (base / path).resolve()
        if not target.is_relative_to(base) or not target.is_file():
            raise ModelSpecError(f"local model {name!r} is not a .gguf file in the server's "
                                 f"models folder ({hint})")
        return str(target) + spec.model[len(name):].lstrip()

    def check(self, spec: str, environment: str | None = None) -> ModelChoice:
        """Parse ``spec`` and apply every rule the build will (and, given the
        ``environment``, that a simulator can play it); raises ``UserError``."""
        parsed = parse_model_spec(spec)
        if parsed.backend == "sim":
            _check_simulator(parsed)
        elif parsed.backend == "script":
            from adapt.llm.script import ScriptModel

            ScriptModel.from_spec(parsed.model, allow_files=self.operator)
        elif parsed.backend == "local":
            self._local_model(parsed)
        else:
            self.endpoint(parsed)
        if environment is not None:
            check_plays(spec, environment)
        return ModelChoice(str(parsed), parsed.simulated)

    def build(self, spec: str) -> ChatModel:
        """The model ``spec`` names; the key sent is the named endpoint's own."""
        parsed = parse_model_spec(spec)
        if parsed.backend == "sim":
            from adapt.sim import from_spec  # lazy: real-model users never load the simulator

            return from_spec(str(parsed))
        if parsed.backend == "script":
            from adapt.llm.script import ScriptModel

            return ScriptModel.from_spec(parsed.model, allow_files=self.operator)
        if parsed.backend == "local":
            from adapt.llm.local import LocalLlamaModel

            return LocalLlamaModel.from_spec(self._local_model(parsed))
        endpoint = self.endpoint(parsed)
        cls = OpenAIChatModel if parsed.backend == "openai" else OpenAICompletionModel
        s = self.settings
        return cls(parsed.model, base_url=endpoint.base_url, api_key=endpoint.api_key or NO_KEY,
                   timeout=s.llm_timeout,
                   max_retries=(s.llm_max_retries if self.client_retries is None
                                else self.client_retries),
                   allow_remote=s.allow_remote_llm, simulated=parsed.simulated, pool=self.pool,
                   endpoint=endpoint.name, server_kind=endpoint.server_kind)

