"""A plan's AND/OR tree, shared by the strategies that plan (``adapt``, ``plan_and_execute``).

The plan's steps become child ``task`` nodes one level deeper; nested groups in the logic
expression become ``group`` nodes (not executed, no extra depth). AND runs its children in
order and stops at the first failure, OR at the first success; children not run because of
that, or because the environment ended the episode, are marked ``skipped``. With
``approval.parallel_siblings`` an AND group's children start while earlier ones wait for a
decision (``adapt.engine.siblings``). How a task child
is solved is the strategy's (``solve``); the rest is the node runner's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from adapt.engine.node_runner import NodeRunner
from adapt.engine.siblings import Group, Siblings
from adapt.engine.tree import LogicExpr, LogicGroup, Node, StepRef

#: how a strategy solves one task node of the tree (True: it succeeded)
Solve = Callable[[Node], Awaitable[bool]]


def describe(expr: LogicExpr, steps: list[str]) -> str:
    """A readable goal for a group node: its children's goals joined by the operator."""
    if isinstance(expr, StepRef):
        return steps[expr.index - 1]
    inner = f" {expr.op.upper()} ".join(
        describe(c, steps) if isinstance(c, StepRef) else f"({describe(c, steps)})"
        for c in expr.children
    )
    return inner


def skip_reason(op: str, decider: Node | None) -> str:
    """Why a child of an ``op`` group is not run: the sibling ``decider`` settled the group
    (``None``: the environment ended the episode)."""
    if decider is None:
        return "skipped: the environment ended the episode"
    if op == "or":
        return f"skipped: an earlier OR alternative succeeded (node {decider.id})"
    return f"skipped: an earlier AND step failed (node {decider.id})"


def as_group(expr: LogicExpr) -> LogicGroup:
    """The plan's expression as a group (a single step is an AND of one)."""
    return expr if isinstance(expr, LogicGroup) else LogicGroup(op="and", children=[expr])


class PlanTree:
    """Builds a plan's child nodes and runs them with ``solve``."""

    def __init__(self, runner: NodeRunner, solve: Solve) -> None:
        self.runner = runner
        self.run = runner.run
        self.solve = solve

    async def build(
        self, parent: Node, group: LogicGroup, steps: list[str], depth: int, start: int = 0
    ) -> list[Node]:
        """Create (pending) child nodes for every operand of ``group``, recursively, at
        positions from ``start`` on (after a parent's earlier children)."""
        kids: list[Node] = []
        for position, child in enumerate(group.children, start):
            if isinstance(child, StepRef):
                kid = await self.run.new_node(
                    kind="task", parent_id=parent.id, position=position, depth=depth,
                    goal=steps[child.index - 1],
                )
            else:
                kid = await self.run.new_node(
                    kind="group", parent_id=parent.id, position=position, depth=depth,
                    goal=describe(child, steps), logic=child.op,
                )
                await self.build(kid, child, steps, depth)
            kids.append(kid)
        return kids

    async def run_children(self, op: str, kids: list[Node]) -> bool:
        run = self.run
        if op == "and" and run.siblings is not None:
            return await self._and_siblings(kids, run.siblings)
        decided: bool | None = None
        decider: Node | None = None
        ran_any = False
        for kid in kids:
            if decided is not None or run.episode_done:
                await self.runner.skip(kid, skip_reason(op, decider))
                continue
            ok = await (self.solve(kid) if kid.kind == "task" else self.run_group(kid))
            ran_any = True
            if op == "and" and not ok:
                decided, decider = False, kid
            elif op == "or" and ok:
                decided, decider = True, kid
        if decided is not None:
            return decided
        if run.episode_done and run.reward <= 0:
            return False
        # AND: every child that ran succeeded; OR: none succeeded (unless the episode ended
        # with a reward, which satisfies the goal).
        return (op == "and" and ran_any) or (run.episode_done and run.reward > 0)

    async def _and_siblings(self, kids: list[Node], siblings: Siblings) -> bool:
        """An AND group with ``approval.parallel_siblings``: each child starts once the one
        before it ended or waits for a decision (``adapt.engine.siblings``); a failed child
        stops the start of later ones (skipped), children already started still end."""
        run = self.run
        group = Group()
        started: list[tuple[Node, asyncio.Task[bool]]] = []
        decider: Node | None = None
        for kid in kids:
            if decider is not None or run.episode_done:
                await self.runner.skip(kid, skip_reason("and", decider))
                continue
            task = siblings.start(
                group, self.solve(kid) if kid.kind == "task" else self.run_group(kid))
            started.append((kid, task))
            await siblings.settle()
            if group.error is not None:
                raise group.error
            if task.done() and not task.result():
                decider = kid
        await siblings.join(group)
        if decider is not None or not all(task.result() for _, task in started):
            return False
        if run.episode_done and run.reward <= 0:
            return False
        return bool(started) or (run.episode_done and run.reward > 0)

    async def run_group(self, node: Node) -> bool:
        await self.run.update(node, status="running")
        ok = await self.run_children(node.logic or "and", self.run.children(node))
        return await self.runner.finish(node, ok)
