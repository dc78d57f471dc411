"""A plan a person approves: :func:`reviewed_plan` asks the planner, then (with
``approval.plans``) the person, as many times as they reject it.

An edited plan replaces the planner's; a rejected one is planned again with the reason added to
the task (``adapt.engine.approvals``). A plan with no steps is not asked about (the node fails
without it)."""

from __future__ import annotations

from adapt.engine.planning.planner import Planner
from adapt.engine.proposals import edited_plan, plan_proposal, rejection_note
from adapt.engine.tree import Node, Plan


async def reviewed_plan(planner: Planner, node: Node, task: str,
                        first: Plan | None = None) -> Plan:
    """The plan for ``node``, approved by a person when the task asks for it. ``first``: a
    plan to propose before asking the planner (a stored one, ``reuse.plans``); a person who
    rejects it gets the planner's."""
    run = planner.run
    plan = first if first is not None else await planner.plan(node, task)
    if not run.config.approval.plans:
        return plan
    while plan.steps and plan.expression is not None:
        decision = await run.ask(node, "plan", plan_proposal(plan))
        if decision.decision == "approve":
            return plan
        if decision.decision == "edit":
            return edited_plan(decision.proposal or {})
        task = f"{task}\n{rejection_note('plan', decision.reason)}"
        plan = await planner.plan(node, task)
    return plan
