"""The standalone ``stateflow`` strategy: one machine run on the root task, no decomposition."""

from __future__ import annotations

from adapt.engine.executors.stateflow.executor import StateFlowExecutor
from adapt.engine.runtime import Run
from adapt.engine.tree import Node


async def stateflow_strategy(run: Run, goal: str, task: str) -> Node:
    """The environment's StateFlow machine alone, once, on the whole task (depth 1).

    Whatever ``executor.kind`` says; the turn limit is the machine's ``max_turns`` (or
    ``executor.max_steps`` when set). The root records the outcome as ADaPT's nodes do.
    """
    root = await run.new_node(kind="task", goal=goal, depth=1)
    await run.update(root, status="running", context_in=run.context)
    result = await StateFlowExecutor(run).execute(root, task)
    fields: dict[str, object] = {
        "executor_success": result.success, "self_assessed": result.self_assessed,
        "reward": result.reward, "termination": result.termination,
        "status": "succeeded" if result.success else "failed", "success": result.success,
    }
    if result.success:
        run.context = run.env.salient_state()
        fields["context_out"] = run.context
    await run.update(root, **fields)
    return root
