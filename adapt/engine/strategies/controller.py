"""The ADaPT controller (Algorithm 1): execute, and decompose only when the executor fails.

- A task node runs the executor on its goal. Success ends the node. On failure, if
  ``depth < d_max``, the planner decomposes the goal; the plan's steps become child task nodes at
  ``depth + 1``; nested groups in the logic expression become ``group`` nodes (not executed, no
  extra depth). At ``depth == d_max`` a failed executor run is final.
- AND runs children in order and stops at the first failure; OR stops at the first success.
  Children not run because of that are marked ``skipped``. A node's success is the logic
  combination of its children.
- After every successful task node the environment's salient state is propagated to later
  executor prompts (and planner prompts, unless disabled).
- Verification (``RunConfig.verification``, :mod:`adapt.engine.claim_checks`): the environment
  checks each task node's goal before (already satisfied: skipped, ``verified``), during (confirmed:
  the run ends early) and after its executor run (a refuted claim fails the node, ``refuted``, and
  the evidence goes into the planner's task); a decomposed node's goal is checked again once
  its children ran (the environment's verdict, where it has one, decides the node).
- When the environment ends the episode (e.g. the goal item entered the inventory), every node
  not yet run is skipped; the combination then counts only the children that ran.

Trying a node (execute, verify, record, finish) is the node runner's
(``adapt.engine.node_runner``), the AND/OR tree of a plan ``plans.PlanTree``'s: this module
decides only when to execute, when to plan and when to escalate a model cascade.
"""

from __future__ import annotations

from adapt.engine import claim_checks
from adapt.engine.node_runner import NodeRunner
from adapt.engine.planning.logic import all_and
from adapt.engine.planning.planner import Planner
from adapt.engine.planning.review import reviewed_plan
from adapt.engine.reuse import example
from adapt.engine.runtime import Run
from adapt.engine.strategies.plans import PlanTree, as_group, describe
from adapt.engine.tree import Node, Plan
from adapt.envs.base import env_call, undoable


class AdaptController:
    """ADaPT (Algorithm 1) on a node runner: the ``adapt`` strategy."""

    def __init__(self, run: Run, runner: NodeRunner | None = None) -> None:
        self.run = run
        self.runner = runner if runner is not None else NodeRunner(run)
        self.planner = Planner(run)
        self.tree = PlanTree(self.runner, self.solve)

    async def solve(self, node: Node, task: str | None = None) -> bool:
        """Run one task node (recursively). ``task`` defaults to the env's observation.

        With a model cascade (``run.executor_models``, more than one) the executor runs are
        child ``attempt N`` nodes (``NodeRunner.cascade``) and the plan's steps go under a
        ``plan`` group child; ``executor.cascade`` says whether the later models come before
        the decomposition or after it failed."""
        run, runner = self.run, self.runner
        if task is None:
            task = await env_call(run.env, run.env.task_observation, node.goal)
        env = run.env
        cascade = len(run.executor_models) > 1
        after = cascade and run.config.executor.cascade == "after"
        undo = undoable(env)
        mark = (await env_call(env, undo.checkpoint) if undo is not None and not cascade
                else None)
        if cascade:
            result = await runner.cascade(node, task, 0 if not after else None)
        else:
            result = await runner.execute(node, task)
        if result.success:
            return await runner.finish(node, True)
        if node.verdict == "refuted" and node.evidence:  # the next attempt hears why
            task = f"{task}\n{claim_checks.feedback(node.evidence)}"
        if undo is not None and not cascade and not run.episode_done:  # a failed attempt
            await env_call(env, undo.rollback, mark)  # leaves nothing behind
        if run.episode_done or node.depth >= run.config.d_max:
            await run.update(node, reason=(
                "not decomposed: the environment ended the episode" if run.episode_done else
                f"not decomposed: d_max reached (depth {node.depth} of {run.config.d_max})"))
            if after and not run.episode_done:
                return await runner.finish(node, (await runner.cascade(node, task, 1)).success)
            return await runner.finish(node, False)

        plan = await self.plan(node, task)
        if not plan.steps or plan.expression is None:
            await run.update(node, plan=plan, error="the planner returned no steps",
                             reason="not decomposed: the planner returned no steps")
            if after and not run.episode_done:
                return await runner.finish(node, (await runner.cascade(node, task, 1)).success)
            return await runner.finish(node, False)
        ok = await self.decompose(node, plan, cascade)
        if not ok and taken(plan) and not run.episode_done:
            # a stored plan that failed is demoted (``check_decomposed``), and the planner
            # plans from where it left off, as it would have without reuse
            fresh = await reviewed_plan(self.planner, node, task if not node.evidence else
                                        f"{task}\n{claim_checks.feedback(node.evidence)}")
            if fresh.steps and fresh.expression is not None:
                note = (f"planned again: the stored plan (library entry "
                        f"{(plan.reused or {}).get('entry')}) did not reach the goal")
                ok = await self.decompose(node, fresh.model_copy(
                    update={"warnings": [*fresh.warnings, note]}), cascade)
        if not ok and after and not run.episode_done:
            ok = (await runner.cascade(node, task, 1)).success
        return await runner.finish(node, ok)

    async def decompose(self, node: Node, plan: Plan, cascade: bool) -> bool:
        """Run ``plan``'s steps as ``node``'s sub-tasks (under a ``plan`` group with a
        cascade); the node's outcome (the environment's verdict where it has one)."""
        run, runner = self.run, self.runner
        group = as_group(plan.expression or all_and(len(plan.steps)))
        await run.update(node, plan=plan, logic=group.op)
        holder = node
        if cascade:  # the plan's steps under one group, apart from the attempt nodes
            holder = await run.new_node(
                kind="group", parent_id=node.id, position=len(run.children(node)),
                depth=node.depth + 1, goal=describe(group, plan.steps), logic=group.op,
                label="plan")
            await run.update(holder, status="running")
        children = await self.tree.build(holder, group, plan.steps, node.depth + 1,
                                         start=len(run.children(holder)))
        ok = await self.tree.run_children(group.op, children)
        if holder is not node:
            await runner.finish(holder, ok)
        return await runner.check_decomposed(node, ok)

    async def plan(self, node: Node, task: str) -> Plan:
        """The plan for ``node``: with ``reuse.plans`` and a stored plan for its goal, that
        plan (``plans_mode`` ``reuse``: no planner call, its verdict counts for the entry) or
        the planner's with it as an example (``example``); else the planner's."""
        experience = self.run.experience
        stored = await experience.stored_plan(node) if experience is not None else None
        if experience is None or stored is None:
            return await reviewed_plan(self.planner, node, task)
        if self.run.config.reuse.plans_mode == "example":
            plan = await reviewed_plan(self.planner, node, f"{task}\n{example(stored)}")
            return plan.model_copy(update={"reused": stored.reused})
        plan = await reviewed_plan(self.planner, node, task, first=stored)
        if plan is stored:
            experience.plan_taken(node, plan)
        return plan


def taken(plan: Plan) -> bool:
    """Whether ``plan`` is a stored one taken as is (``reuse.plans``, mode ``reuse``)."""
    return plan.reused is not None and plan.reused.get("mode") == "reuse"
