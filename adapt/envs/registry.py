"""Find environments by name: the built-ins plus plug-ins registered through entry points.

A separate package adds an environment without touching this project by declaring an entry
point in the ``adapt.environments`` group::

    [project.entry-points."adapt.environments"]
    keys = "adapt_env_keys:KeysEnv"

Built-ins are imported lazily, and a target that fails to import (or is not an environment
class) is logged as a warning and left out, so one broken plug-in never breaks the registry.
When two targets claim the same name, the first wins: built-ins first, then entry points in
``sys.path`` order. The table is built once and cached; :func:`refresh` rebuilds it.

Environments served by another process (registered by the operator, see
:mod:`adapt.envs.remote`) are entries of their own (:func:`set_remote`): each makes its class
when first asked (from the server's metadata), and a registered name hides a built-in or
plug-in of the same name.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from adapt.envs.base import Environment
from adapt.errors import (
    EnvironmentUnavailable,
    InvalidConfig,
    RemoteEnvironmentError,
    UnknownEnvironment,
    UserError,
)

logger = logging.getLogger(__name__)

#: the entry-point group plug-in packages register their environments in
ENTRY_POINT_GROUP = "adapt.environments"

#: built-in environments: name -> ``module:attribute``, imported only when the table is built
BUILTINS: dict[str, str] = {
    "textcraft": "adapt.envs.textcraft:TextCraft",
    "intercode_sql": "adapt.envs.intercode_sql:InterCodeSQL",
    "intercode_bash": "adapt.envs.intercode_bash:InterCodeBash",
    "calculator": "adapt.envs.calculator:Calculator",
    # MCP servers the operator registers (the client is the optional extra ``mcp``: without it
    # the environment is listed and says how to install it when an episode starts)
    "mcp": "adapt.envs.mcp:MCPEnvironment",
    # optional extra ``alfworld``: without it the import fails and the entry is left out with a
    # warning that says how to install it
    "alfworld": "adapt.envs.alfworld:ALFWorld",
}

#: what a class needs to be taken as an environment (the ``Environment`` protocol's members)
_REQUIRED_MEMBERS = (
    "name",
    "description",
    "config_model",
    "default_max_steps",
    "action_grammar",
    "goal",
    "reset",
    "step",
    "salient_state",
    "task_observation",
    "is_failure",
    "prompt_template",
    "close",
)

_lock = threading.RLock()  # re-entrant: a plug-in may consult the registry while importing
_cache: dict[str, type[Environment]] | None = None


class RemoteEntry(Protocol):
    """An environment served by another process (:class:`adapt.envs.remote.RemoteLoader`)."""

    def loaded(self) -> type[Environment] | None:
        """The class, when it was made already (no request)."""
        ...

    def load(self, *, wait: bool = True) -> type[Environment]:
        """The class, made from the server's metadata if need be; ``EnvironmentUnavailable``
        when the server does not answer (``wait=False``: after one try)."""
        ...


_remote: dict[str, RemoteEntry] = {}


def set_remote(entries: Mapping[str, RemoteEntry]) -> None:
    """Make ``entries`` the process's remote environments (replacing those set before)."""
    global _remote
    with _lock:
        _remote = dict(entries)


def remote_entries() -> dict[str, RemoteEntry]:
    """The process's remote environments, by name (a copy)."""
    with _lock:
        return dict(_remote)


class EnvironmentInfo(BaseModel):
    """What ``describe()`` tells about one environment (JSON-ready)."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    config_schema: dict[str, Any]
    default_max_steps: int
    action_grammar: str


@dataclass(frozen=True, slots=True)
class _Candidate:
    name: str
    target: str
    origin: str
    entry_point: EntryPoint | None = None

    def load(self) -> object:
        if self.entry_point is not None:
            return self.entry_point.load()
        module_name, _, attribute = self.target.partition(":")
        obj: object = importlib.import_module(module_name.strip())
        for part in attribute.strip().split(".") if attribute.strip() else []:
            obj = getattr(obj, part)
        return obj


def _candidates() -> list[_Candidate]:
    found = [_Candidate(name, target, "built-in") for name, target in BUILTINS.items()]
    try:
        declared = list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception as exc:  # a corrupt dist-info must not break the registry
        logger.warning("could not read %r entry points: %s", ENTRY_POINT_GROUP, exc)
        declared = []
    for ep in declared:
        dist = getattr(ep, "dist", None)
        origin = f"entry point of {dist.name}" if dist is not None else "entry point"
        found.append(_Candidate(ep.name, ep.value, origin, ep))
    return found


def _problem(obj: object) -> str | None:
    """Why ``obj`` cannot be registered as an environment class, or ``None`` if it can."""
    if not isinstance(obj, type):
        return f"it is a {type(obj).__name__}, not a class"
    missing = [member for member in _REQUIRED_MEMBERS if not hasattr(obj, member)]
    if missing:
        return f"it lacks {', '.join(missing)}"
    config_model: object = getattr(obj, "config_model", None)
    if not (isinstance(config_model, type) and issubclass(config_model, BaseModel)):
        return "its config_model is not a pydantic BaseModel subclass"
    return None


#: environments whose optional dependencies are missing: name -> the import error (how to fix)
_missing: dict[str, str] = {}


def _build() -> dict[str, type[Environment]]:
    table: dict[str, type[Environment]] = {}
    claimed: dict[str, _Candidate] = {}
    for candidate in _candidates():
        first = claimed.get(candidate.name)
        if first is not None:
            if first.target != candidate.target:
                logger.warning(
                    "environment %r: ignoring %s (%s); %s (%s) registered that name first",
                    candidate.name,
                    candidate.origin,
                    candidate.target,
                    first.origin,
                    first.target,
                )
            continue
        claimed[candidate.name] = candidate
        try:
            obj = candidate.load()
        except ImportError as exc:
            if not getattr(exc, "optional_extra", False):
                logger.warning("environment %r (%s, %s) failed to load and is left out: %s: %s",
                               candidate.name, candidate.origin, candidate.target,
                               type(exc).__name__, exc)
                continue
            # an optional extra that is not installed: said only when the environment is asked
            # for (``get``), not on every command
            _missing[candidate.name] = str(exc)
            logger.debug("environment %r is not available: %s", candidate.name, exc)
            continue
        except Exception as exc:
            logger.warning(
                "environment %r (%s, %s) failed to load and is left out: %s: %s",
                candidate.name,
                candidate.origin,
                candidate.target,
                type(exc).__name__,
                exc,
                exc_info=logger.isEnabledFor(logging.DEBUG),
            )
            continue
        problem = _problem(obj)
        if problem is not None:
            logger.warning(
                "environment %r (%s, %s) is left out: %s",
                candidate.name,
                candidate.origin,
                candidate.target,
                problem,
            )
            continue
        env_class = cast("type[Environment]", obj)
        if env_class.name != candidate.name:
            logger.warning(
                "environment %r (%s) says its name is %r; it is registered as %r",
                candidate.name,
                candidate.target,
                env_class.name,
                candidate.name,
            )
        table[candidate.name] = env_class
    logger.debug("environments available: %s", ", ".join(sorted(table)) or "(none)")
    return table


def refresh() -> None:
    """Forget the cached table; the next call rebuilds it (e.g. after installing a plug-in)."""
    global _cache
    with _lock:
        _cache = None


def _local(refresh: bool = False) -> dict[str, type[Environment]]:
    global _cache
    with _lock:
        if _cache is None or refresh:
            _cache = _build()
        return dict(_cache)


def available(*, refresh: bool = False) -> dict[str, type[Environment]]:
    """Every environment that loaded, by name: the built-ins and plug-ins (a copy of the cached
    table) and the remote environments whose servers answer (one try for each whose metadata
    was not read yet; one that does not answer is logged and left out)."""
    table = _local(refresh)
    for name, entry in remote_entries().items():
        try:
            table[name] = entry.load(wait=False)
        except (EnvironmentUnavailable, RemoteEnvironmentError) as exc:
            table.pop(name, None)
            logger.warning("remote environment %r is left out: %s", name, exc)
    return table


def get(name: str) -> type[Environment]:
    """The environment class registered as ``name``; ``UnknownEnvironment`` lists the others.
    A remote environment whose server does not answer raises ``EnvironmentUnavailable``."""
    entry = remote_entries().get(name)
    if entry is not None:
        return entry.load()
    table = _local()
    try:
        return table[name]
    except KeyError:
        if name in _missing:
            raise UserError(f"environment {name!r} is not available: {_missing[name]}") from None
        raise UnknownEnvironment(name, sorted({*table, *remote_entries()})) from None


def create(name: str, **kwargs: Any) -> Environment:
    """A new instance of environment ``name``; ``kwargs`` go to its constructor."""
    return get(name)(**kwargs)


def environment_info(name: str) -> EnvironmentInfo:
    """Describe one environment; a config model whose schema fails gives ``{}`` (logged)."""
    env_class = get(name)
    try:
        schema = env_class.config_model.model_json_schema()
    except Exception as exc:
        logger.warning("environment %r: config_model has no JSON schema: %s", name, exc)
        schema = {}
    return EnvironmentInfo(
        name=name,
        description=env_class.description,
        config_schema=schema,
        default_max_steps=env_class.default_max_steps,
        action_grammar=env_class.action_grammar,
    )


def describe() -> list[EnvironmentInfo]:
    """One ``EnvironmentInfo`` per available environment, sorted by name."""
    return [environment_info(name) for name in sorted(available())]


def format_validation_errors(error: ValidationError) -> str:
    """Every error of ``error`` as ``location: message``, joined by ``; ``."""
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or '(config)'}: {e['msg']}"
        for e in error.errors(include_url=False)
    )


def validate_config(name: str, config: Mapping[str, Any] | None = None) -> BaseModel:
    """Validate ``config`` against the environment's ``config_model``.

    Raises ``InvalidConfig`` whose message names the environment and lists every field error as
    ``location: message``, e.g. ``invalid config for environment 'keys': rooms: Input should be
    less than or equal to 8; colour: Extra inputs are not permitted``.
    """
    config_model = get(name).config_model
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise InvalidConfig(
            f"invalid config for environment {name!r}: expected an object of settings, "
            f"got {type(config).__name__}"
        )
    try:
        return config_model.model_validate(dict(config))
    except ValidationError as exc:
        count = exc.error_count()
        raise InvalidConfig(
            f"invalid config for environment {name!r} ({count} error{'' if count == 1 else 's'}): "
            f"{format_validation_errors(exc)}"
        ) from exc
