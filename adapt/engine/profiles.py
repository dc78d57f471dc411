"""Profiles: ``default`` (the project's improved behaviour) or ``paper`` (the published protocols).

A profile is a set of run settings and environment settings. ``paper`` turns the decoding
monitor and verification off everywhere, and takes the rest from the environment: an environment class lists what
its paper (or, where the paper is silent, the authors' code) uses in ``paper_profile``::

    paper_profile = {
        "executor": {"max_steps": 20, "patience": 8, "max_tokens": 150},
        "planner": {"max_tokens": 800, "propagate_context": False},
        "environment_config": {"prompts": "paper"},
        "by_executor": {"stateact": {"max_steps": 50}},  # per executor kind, over "executor"
    }

Settings given explicitly win over the profile's: :func:`apply_profile` only fills the fields of
``executor``, ``planner`` and ``monitor`` the caller did not set (pydantic's
``model_fields_set``), and only the ``environment_config`` keys not given. Applying a profile
twice changes nothing, so the edges (API, CLI, bench) apply it to store what ran, and
``run_task`` applies it for library callers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from adapt.engine.config import RunConfig
from adapt.envs.base import paper_profile

Profile = Literal["default", "paper"]
PROFILES: tuple[str, ...] = ("default", "paper")
#: what ``paper`` sets for every environment (the papers ran without a decoding monitor)
PAPER_COMMON: dict[str, dict[str, Any]] = {"monitor": {"enabled": False}}
_SECTIONS = ("executor", "planner", "monitor")
#: top-level fields ``paper`` sets (the papers' executors decided by their own claim)
PAPER_TOP: dict[str, Any] = {"verification": "off"}


def profile_settings(profile: str, env: object) -> dict[str, dict[str, Any]]:
    """The settings a profile adds for an environment (class or instance): sections
    ``executor``, ``planner``, ``monitor`` and ``environment_config``."""
    if profile != "paper":
        return {}
    own: Mapping[str, Mapping[str, Any]] = paper_profile(env)
    out: dict[str, dict[str, Any]] = {k: dict(v) for k, v in PAPER_COMMON.items()}
    for section, values in own.items():
        if section != "by_executor":
            out.setdefault(section, {}).update(values)
    return out


def _executor_settings(profile: str, env: object, kind: str) -> dict[str, Any]:
    if profile != "paper":
        return {}
    own: Mapping[str, Any] = paper_profile(env)
    return dict(own.get("by_executor", {}).get(kind, {}))


def apply_profile(config: RunConfig, env: object,
                  env_config: Mapping[str, Any] | None = None) -> tuple[RunConfig, dict[str, Any]]:
    """``config`` and ``env_config`` with the profile's settings filled in where the caller set
    nothing (see the module docstring)."""
    given = dict(env_config or {})
    settings = profile_settings(config.profile, env)
    if not settings:
        return config, given
    settings.setdefault("executor", {}).update(
        _executor_settings(config.profile, env, config.executor.kind))
    # what the caller set, plus the profile's values: the result's fields_set says what was
    # chosen (executors that pick their own default for an unset field keep doing so)
    data = config.model_dump(exclude_unset=True)
    data["profile"] = config.profile
    for section in _SECTIONS:
        explicit = getattr(config, section).model_fields_set
        chosen = data.setdefault(section, {})
        for key, value in settings.get(section, {}).items():
            if key not in explicit:
                chosen[key] = value
    for key, value in PAPER_TOP.items():
        if key not in config.model_fields_set:
            data[key] = value
    extra = settings.get("environment_config", {})
    return RunConfig.model_validate(data), {**extra, **given}


__all__ = ["PROFILES", "Profile", "apply_profile", "profile_settings"]
