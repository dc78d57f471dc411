"""Executors: how one (sub-)task is run in the environment (ReAct, StateAct, StateFlow, spec)."""

from adapt.engine.executors.base import ExecutionResult, Executor
from adapt.engine.executors.registry import (
    ENTRY_POINT_GROUP,
    available_executors,
    make_executor,
    register_executor,
)

__all__ = ["ENTRY_POINT_GROUP", "ExecutionResult", "Executor", "available_executors",
           "make_executor", "register_executor"]
