"""Profiles: ``default`` (the project's improved behaviour) or ``paper`` (the published protocols).

A profile is a set of run settings and environment settings. ``paper`` turns the decoding
monitor and verification off everywhere, and takes the rest from the environment: an environment
class lists what its paper (or, where the paper is silent, the authors' code) uses in
``paper_profile``::

    paper_profile = {
        "run": {"d_max": 4},                        # top-level RunConfig fields
        "executor": {"max_steps": 20, "patience": 8, "max_tokens": 150},
        "planner": {"max_tokens": 800, "propagate_context": False},
        "environment_config": {"prompts": "paper"},
        # per executor design: executor fields over "executor"; its "run" and
        # "environment_config" over the sections above
        "by_executor": {"react": {"run": {"react_steps": 60}},
                        "stateact": {"max_steps": 50},
                        "stateflow": {"environment_config": {"near_miss": "bleu"}}},
    }

The executor design of ``by_executor`` is ``executor.kind``, or ``stateflow`` under the
standalone ``stateflow`` strategy (which runs the machine whatever the kind says).

This module says what a profile sets; :func:`adapt.engine.resolve.resolve_config` applies it,
once, where a run's configuration is resolved: it fills only the top-level fields and the fields
of ``executor``, ``planner`` and ``monitor`` the caller did not set (pydantic's
``model_fields_set``: ``d_max`` left out of an API request or ``adapt run`` is filled,
``"d_max": 3`` is kept; an ``executor`` setting the executor's kind does not take is left out),
and only the ``environment_config`` keys not given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from adapt.engine.config import Profile, RunConfig
from adapt.envs.base import paper_profile

PROFILES: tuple[str, ...] = get_args(Profile)
#: what ``paper`` sets for every environment (the papers ran without a decoding monitor)
PAPER_COMMON: dict[str, dict[str, Any]] = {"monitor": {"enabled": False},
                                           "reuse": {"skills": False, "plans": False}}
#: top-level fields ``paper`` sets everywhere (the papers' executors decided by their own
#: claim); an environment's ``run`` section adds its own (``d_max``, ``react_steps``)
PAPER_TOP: dict[str, Any] = {"verification": "off"}
#: the keys of a ``by_executor`` entry that hold sections, not executor fields
SECTION_KEYS = ("run", "environment_config")


def profile_settings(profile: str, env: object) -> dict[str, dict[str, Any]]:
    """The settings a profile adds for an environment (class or instance): sections ``run``
    (top-level fields), ``executor``, ``planner``, ``monitor`` and ``environment_config``."""
    if profile != "paper":
        return {}
    own: Mapping[str, Mapping[str, Any]] = paper_profile(env)
    out: dict[str, dict[str, Any]] = {k: dict(v) for k, v in PAPER_COMMON.items()}
    out["run"] = dict(PAPER_TOP)
    for section, values in own.items():
        if section != "by_executor":
            out.setdefault(section, {}).update(values)
    return out


def design(config: RunConfig) -> str:
    """The executor design a run uses: ``executor.kind``, or ``stateflow`` under the standalone
    ``stateflow`` strategy."""
    return "stateflow" if config.strategy == "stateflow" else config.executor.kind


def executor_settings(profile: str, env: object, kind: str) -> dict[str, Any]:
    """What a profile's ``by_executor`` entry for executor design ``kind`` sets: executor
    fields, and the sections of ``SECTION_KEYS``."""
    if profile != "paper":
        return {}
    own: Mapping[str, Any] = paper_profile(env)
    return dict(own.get("by_executor", {}).get(kind, {}))


__all__ = ["PAPER_COMMON", "PAPER_TOP", "PROFILES", "SECTION_KEYS", "Profile", "design",
           "executor_settings", "profile_settings"]
