"""Strategies: ADaPT and the baselines (react, plan_and_execute, try_again, reflexion,
stateflow), each a function that drives one task and returns the root node."""

from adapt.engine.strategies.registry import (
    ENTRY_POINT_GROUP,
    Strategy,
    available_strategies,
    get_strategy,
    register,
)

__all__ = ["ENTRY_POINT_GROUP", "Strategy", "available_strategies", "get_strategy", "register"]
