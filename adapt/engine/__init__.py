"""The ADaPT engine: pure library code (no web, database or queue imports).

Layout: ``task`` (``run_task``, the entry point) drives a strategy (``strategies/``) over one
``runtime.Run`` (nodes, events, budgets, every LLM call); strategies try nodes through the node
runner (``node_runner``), which runs executors (``executors/``), and call the planner
(``planning/``); ``spec/`` is the behaviour-specification language and decoding monitor;
``tree`` and ``events`` are the data the engine emits and the sinks that receive it
(``sinktesting``: their conformance kit); ``config`` what a run asks for and what runs, which
``resolve`` turns the one into, once.
"""

from adapt.engine.budget import Budget
from adapt.engine.config import ExecutorConfig, PlannerConfig, ResolvedConfig, RunConfig
from adapt.engine.events import Event, FanoutSink, MemorySink, NullSink, TreeSink
from adapt.engine.executors import available_executors, register_executor
from adapt.engine.planning.parse import parse_plan
from adapt.engine.resolve import resolve_config
from adapt.engine.strategies import available_strategies, get_strategy, register
from adapt.engine.task import run_task
from adapt.engine.tree import LLMCall, Node, Plan, Step, TaskResult, UsageTotals

__all__ = [
    "Budget", "Event", "ExecutorConfig", "FanoutSink", "LLMCall", "MemorySink", "Node",
    "NullSink", "Plan", "PlannerConfig", "ResolvedConfig", "RunConfig", "Step", "TaskResult",
    "TreeSink", "UsageTotals", "available_executors", "available_strategies", "get_strategy",
    "parse_plan", "register", "register_executor", "resolve_config", "run_task",
]
