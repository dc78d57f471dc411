"""A run's configuration, resolved once: :func:`resolve_config` turns what a caller asked for
(``RunConfig``, the environment config, the models, the operator's budget limits) into the
frozen :class:`~adapt.engine.config.ResolvedConfig` the engine runs with as it is.

It is the one place a profile is applied: for each field the caller left unset, the profile's
value (``profile_settings``, from the environment's ``paper_profile``), and the profile's
environment settings for each environment config key not given. Explicit settings win, so a
request that names its ``d_max`` keeps it. The service resolves a submission once and stores
the result (the worker runs the stored config, not the request again); ``adapt run`` and the
bench resolve before they run; ``run_task`` resolves a ``RunConfig`` a library caller passes,
and takes a ``ResolvedConfig`` as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import BaseModel

from adapt.engine.budget import Budget
from adapt.engine.config import (
    ModelSpecs,
    ResolvedConfig,
    RunConfig,
    executor_config,
)
from adapt.engine.profiles import SECTION_KEYS, design, executor_settings, profile_settings
from adapt.errors import OverLimit

#: the sections of a run config whose unset fields a profile fills
_SECTIONS = ("executor", "planner", "monitor", "reuse")


@dataclass(frozen=True)
class BudgetLimits:
    """The operator's budget rules: ``default`` for every figure a request leaves unset,
    ``maximum`` the largest a request may ask for (``None`` in either: no such figure)."""

    default: Budget = field(default_factory=Budget)
    maximum: Budget = field(default_factory=Budget)


class Resolved(NamedTuple):
    config: ResolvedConfig
    #: the environment config with the profile's settings where the caller gave none (a dict
    #: for a dict, a model for a validated config model)
    environment_config: BaseModel | dict[str, Any]


def resolve_config(
    config: RunConfig,
    env: object,
    env_config: BaseModel | Mapping[str, Any] | None = None,
    *,
    models: ModelSpecs | None = None,
    limits: BudgetLimits | None = None,
) -> Resolved:
    """``config`` for environment ``env`` (class or instance) resolved: the profile's settings
    where the caller set nothing, the operator's ``limits`` applied to the budget (a figure
    over the maximum raises :class:`~adapt.errors.OverLimit`), ``models`` named. A
    ``ResolvedConfig`` is returned as it is, with ``env_config``."""
    if isinstance(config, ResolvedConfig):
        return Resolved(config, _as_given(env_config))
    data, extra = _apply_profile(config, env)
    if limits is not None:
        data["budget"] = _limited(config.budget, limits)
    if models is not None:
        data["models"] = models
    return Resolved(ResolvedConfig.model_validate(data), _with_extra(env_config, extra))


def _apply_profile(config: RunConfig, env: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """What ``config`` set, plus the profile's value for every field it left unset; and the
    profile's environment settings."""
    settings = profile_settings(config.profile, env)
    own = executor_settings(config.profile, env, design(config))
    for key in SECTION_KEYS:
        settings.setdefault(key, {}).update(own.pop(key, {}))
    settings.setdefault("executor", {}).update(own)
    data = config.model_dump(exclude_unset=True)
    data["profile"] = config.profile
    data.setdefault("executor", {})["kind"] = config.executor.kind
    for section in _SECTIONS:
        explicit = getattr(config, section).model_fields_set
        chosen = data.setdefault(section, {})
        for key, value in settings.get(section, {}).items():
            if key not in explicit:
                chosen[key] = value
    for key, value in settings.get("run", {}).items():
        if key not in config.model_fields_set:
            data[key] = value
    # a profile's executor settings are for any kind: the kind keeps the fields it takes
    data["executor"] = executor_config(data["executor"], only_known=True)
    return data, settings.get("environment_config", {})


def _limited(asked: Budget, limits: BudgetLimits) -> Budget:
    values: dict[str, Any] = {}
    for name in Budget.model_fields:
        value = getattr(asked, name)
        ceiling = getattr(limits.maximum, name)
        if value is not None and ceiling is not None and value > ceiling:
            raise OverLimit(f"budget.{name}", value, ceiling)
        if value is None:
            value = getattr(limits.default, name)
            if value is None or (ceiling is not None and value > ceiling):
                value = ceiling
        values[name] = value
    return Budget.model_validate(values)


def _as_given(env_config: BaseModel | Mapping[str, Any] | None) -> BaseModel | dict[str, Any]:
    return env_config if isinstance(env_config, BaseModel) else dict(env_config or {})


def _with_extra(env_config: BaseModel | Mapping[str, Any] | None,
                extra: Mapping[str, Any]) -> BaseModel | dict[str, Any]:
    """``env_config`` with ``extra`` (the profile's) for every key it does not give."""
    if not isinstance(env_config, BaseModel):
        return {**extra, **(env_config or {})}
    unset = {k: v for k, v in extra.items() if k not in env_config.model_fields_set}
    return env_config.model_copy(update=unset) if unset else env_config


__all__ = ["BudgetLimits", "Resolved", "resolve_config"]
