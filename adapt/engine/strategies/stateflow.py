"""The standalone ``stateflow`` strategy: one machine run on the root task, no decomposition."""

from __future__ import annotations

from adapt.engine.executors.stateflow.executor import StateFlowExecutor
from adapt.engine.node_runner import NodeRunner
from adapt.engine.runtime import Run
from adapt.engine.tree import Node


async def stateflow_strategy(run: Run, goal: str, task: str) -> Node:
    """The environment's StateFlow machine alone, once, on the whole task (depth 1).

    Whatever ``executor.kind`` says; the turn limit is the machine's ``max_turns`` (or
    ``executor.max_steps`` when set). The root records the outcome as ADaPT's nodes do.
    """
    root = await run.new_node(kind="task", goal=goal, depth=1)
    runner = NodeRunner(run, executor=StateFlowExecutor(run))
    result = await runner.execute(root, task)
    await runner.finish(root, result.success)
    return root
