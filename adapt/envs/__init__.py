"""Environments: the protocol plug-in authors implement and the registry that finds them.

Importing this package is cheap: no built-in environment is imported until the registry is first
asked for its table, and nothing from the web or queue layers is imported at all.
"""

from adapt.envs.base import BaseEnvironment, Environment, StepResult
from adapt.envs.registry import (
    ENTRY_POINT_GROUP,
    EnvironmentInfo,
    available,
    create,
    describe,
    environment_info,
    refresh,
    validate_config,
)
from adapt.envs.registry import get as get_environment

__all__ = [
    "ENTRY_POINT_GROUP",
    "BaseEnvironment",
    "Environment",
    "EnvironmentInfo",
    "StepResult",
    "available",
    "create",
    "describe",
    "environment_info",
    "get_environment",
    "refresh",
    "validate_config",
]
