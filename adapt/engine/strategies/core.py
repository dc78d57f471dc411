"""The ``adapt`` strategy (Algorithm 1, ``AdaptController``) and the ``react`` baseline."""

from __future__ import annotations

from adapt.engine.executors.base import ExecuteOptions
from adapt.engine.node_runner import NodeRunner
from adapt.engine.runtime import Run
from adapt.engine.strategies.controller import AdaptController
from adapt.engine.tree import Node


async def adapt_strategy(run: Run, goal: str, task: str) -> Node:
    root = await run.new_node(kind="task", goal=goal, depth=1)
    await AdaptController(run).solve(root, task)
    return root


async def react_strategy(run: Run, goal: str, task: str) -> Node:
    """The executor alone, with a step budget of ``react_steps`` when set (profile paper: the
    published budget), else ``max_steps x d_max`` (the ADaPT paper's rule); with a model
    cascade, each model in turn until one succeeds (``attempt N`` children)."""
    root = await run.new_node(kind="task", goal=goal, depth=1)
    base = run.config.executor.max_steps or run.env.default_max_steps
    runner = NodeRunner(run)
    options = ExecuteOptions(max_steps=run.config.react_steps or base * run.config.d_max)
    if len(run.executor_models) > 1:  # a cascade: each model in turn, as attempt children
        result = await runner.cascade(root, task, 0, options)
    else:
        result = await runner.execute(root, task, options)
    await runner.finish(root, result.success)
    return root
