"""The ``plan_and_execute`` baseline (the paper's section 4.2): plan once, execute every step.

Tree shape: a root ``task`` node (depth 1) that is NOT executed: one planner call with the
environment's ``plan_and_execute`` template (a detailed plan over all levels) goes first, the root
records the plan and ``termination="planned"``. The plan's steps become children at depth 2
(nested AND/OR groups become ``group`` nodes, as in ADaPT); every step is executed once and never
planned (no recursion). AND/OR semantics, ``skipped`` nodes and the propagation of the salient
state are ADaPT's.
"""

from __future__ import annotations

from adapt.engine.planning.planner import Planner
from adapt.engine.prompts import require_template
from adapt.engine.runtime import Run
from adapt.engine.strategies.controller import AdaptController
from adapt.engine.tree import LogicGroup, Node


class PlanAndExecuteController(AdaptController):
    """ADaPT's build/run_children logic with a solve() that only executes (never plans)."""

    def __init__(self, run: Run) -> None:
        super().__init__(run)
        self.planner = Planner(run, template="plan_and_execute")

    async def solve(self, node: Node, task: str | None = None) -> bool:
        task = task if task is not None else self.run.env.task_observation(node.goal)
        result = await self.try_executor(node, task)
        return await self.finish(node, result.success)

    async def plan_root(self, root: Node, task: str) -> bool:
        run = self.run
        await run.update(root, status="running", context_in=run.context)
        plan = await self.planner.plan(root, task)
        if not plan.steps or plan.expression is None:
            await run.update(root, plan=plan, termination="planned",
                             error="the planner returned no steps")
            return await self.finish(root, False)
        expr = plan.expression
        group = expr if isinstance(expr, LogicGroup) else LogicGroup(op="and", children=[expr])
        await run.update(root, plan=plan, logic=group.op, termination="planned")
        children = await self.build(root, group, plan.steps, root.depth + 1)
        ok = await self.run_children(group.op, children)
        return await self.finish(root, ok)


async def plan_and_execute_strategy(run: Run, goal: str, task: str) -> Node:
    """Plan once with a detailed plan (template ``plan_and_execute``), execute every step once.

    The root is not executed; it holds the plan (``termination="planned"``). Steps are children
    at depth 2, executed but never planned, whatever ``d_max`` says.
    """
    require_template(run.env, "plan_and_execute", "plan_and_execute")
    root = await run.new_node(kind="task", goal=goal, depth=1)
    await PlanAndExecuteController(run).plan_root(root, task)
    return root
