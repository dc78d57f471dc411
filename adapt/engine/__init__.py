"""The ADaPT engine: pure library code (no web, database or queue imports)."""

from adapt.engine.budget import Budget
from adapt.engine.config import ExecutorConfig, PlannerConfig, RunConfig
from adapt.engine.events import Event, FanoutSink, MemorySink, NullSink, TreeSink
from adapt.engine.plan_parse import parse_plan
from adapt.engine.runner import run_task
from adapt.engine.strategies import available_strategies, get_strategy, register
from adapt.engine.tree import LLMCall, Node, Plan, Step, TaskResult, UsageTotals

__all__ = [
    "Budget", "Event", "ExecutorConfig", "FanoutSink", "LLMCall", "MemorySink", "Node",
    "NullSink", "Plan", "PlannerConfig", "RunConfig", "Step", "TaskResult", "TreeSink",
    "UsageTotals", "available_strategies", "get_strategy", "parse_plan", "register", "run_task",
]
