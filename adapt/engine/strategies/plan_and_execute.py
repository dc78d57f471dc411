"""The ``plan_and_execute`` baseline (the paper's section 4.2): plan once, execute every step.

Tree shape: a root ``task`` node (depth 1) that is NOT executed: one planner call with the
environment's ``plan_and_execute`` template (a detailed plan over all levels) goes first, the root
records the plan and ``termination="planned"``. The plan's steps become children at depth 2
(nested AND/OR groups become ``group`` nodes, as in ADaPT); every step is executed once and never
planned (no recursion). AND/OR semantics, ``skipped`` nodes and the propagation of the salient
state are ADaPT's.
"""

from __future__ import annotations

from adapt.engine.node_runner import NodeRunner
from adapt.engine.planning.planner import Planner
from adapt.engine.planning.review import reviewed_plan
from adapt.engine.prompts import require_template
from adapt.engine.runtime import Run
from adapt.engine.strategies.plans import PlanTree, as_group
from adapt.engine.tree import Node, Termination
from adapt.envs.base import env_call


class PlanAndExecute:
    """One plan for the root; every step executed once by the node runner, never planned."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.runner = NodeRunner(run)
        self.planner = Planner(run, template="plan_and_execute")
        self.tree = PlanTree(self.runner, self.solve)

    async def solve(self, node: Node) -> bool:
        task = await env_call(self.run.env, self.run.env.task_observation, node.goal)
        result = await self.runner.execute(node, task)
        return await self.runner.finish(node, result.success)

    async def plan_root(self, root: Node, task: str) -> bool:
        run, runner = self.run, self.runner
        await run.update(root, status="running", context_in=run.context)
        plan = await reviewed_plan(self.planner, root, task)
        if not plan.steps or plan.expression is None:
            await run.update(root, plan=plan, termination=Termination.PLANNED,
                             error="the planner returned no steps")
            return await runner.finish(root, False)
        group = as_group(plan.expression)
        await run.update(root, plan=plan, logic=group.op, termination=Termination.PLANNED)
        children = await self.tree.build(root, group, plan.steps, root.depth + 1)
        ok = await self.tree.run_children(group.op, children)
        return await runner.finish(root, ok)


async def plan_and_execute_strategy(run: Run, goal: str, task: str) -> Node:
    """Plan once with a detailed plan (template ``plan_and_execute``), execute every step once.

    The root is not executed; it holds the plan (``termination="planned"``). Steps are children
    at depth 2, executed but never planned, whatever ``d_max`` says.
    """
    require_template(run.env, "plan_and_execute", "plan_and_execute")
    root = await run.new_node(kind="task", goal=goal, depth=1)
    await PlanAndExecute(run).plan_root(root, task)
    return root
