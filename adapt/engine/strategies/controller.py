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
"""

from __future__ import annotations

from dataclasses import replace

from adapt.engine import claim_checks
from adapt.engine.claim_checks import Watch
from adapt.engine.executors import make_executor
from adapt.engine.executors.base import ExecuteOptions, ExecutionResult, Executor
from adapt.engine.planning.planner import Planner
from adapt.engine.runtime import Run
from adapt.engine.tree import LogicExpr, LogicGroup, Node, StepRef
from adapt.envs.base import undoable


def goal_key(goal: str) -> str:
    return " ".join(goal.lower().split()).rstrip(".")


def describe(expr: LogicExpr, steps: list[str]) -> str:
    """A readable goal for a group node: its children's goals joined by the operator."""
    if isinstance(expr, StepRef):
        return steps[expr.index - 1]
    inner = f" {expr.op.upper()} ".join(
        describe(c, steps) if isinstance(c, StepRef) else f"({describe(c, steps)})"
        for c in expr.children
    )
    return inner


class AdaptController:
    def __init__(self, run: Run, executor: Executor | None = None) -> None:
        self.run = run
        self.executor = executor if executor is not None else make_executor(run)
        self.planner = Planner(run)
        #: verification marks taken when task nodes started (node id -> mark)
        self.marks: dict[int, object | None] = {}
        #: the latest refutation evidence per goal, for the next attempt at the same goal
        self.refuted: dict[str, str] = {}

    async def solve(self, node: Node, task: str | None = None) -> bool:
        """Run one task node (recursively). ``task`` defaults to the env's observation.

        With a model cascade (``run.executor_models``, more than one) the executor runs are
        child ``attempt N`` nodes (:meth:`escalate`) and the plan's steps go under a ``plan``
        group child; ``executor.cascade`` says whether the later models come before the
        decomposition or after it failed."""
        run = self.run
        task = task if task is not None else run.env.task_observation(node.goal)
        env = run.env
        cascade = len(run.executor_models) > 1
        after = cascade and run.config.executor.cascade == "after"
        undo = undoable(env)
        mark = undo.checkpoint() if undo is not None and not cascade else None
        if cascade:
            result = await self.escalate(node, task, 0 if not after else None)
        else:
            result = await self.try_executor(node, task)
        if result.success:
            return await self.finish(node, True)
        if node.verdict == "refuted" and node.evidence:  # the next attempt hears why
            task = f"{task}\n{claim_checks.feedback(node.evidence)}"
        if undo is not None and not cascade and not run.episode_done:  # a failed attempt
            undo.rollback(mark)  # leaves nothing behind
        if run.episode_done or node.depth >= run.config.d_max:
            if after and not run.episode_done:
                return await self.finish(node, (await self.escalate(node, task, 1)).success)
            return await self.finish(node, False)

        plan = await self.planner.plan(node, task)
        if not plan.steps or plan.expression is None:
            await run.update(node, plan=plan, error="the planner returned no steps")
            if after and not run.episode_done:
                return await self.finish(node, (await self.escalate(node, task, 1)).success)
            return await self.finish(node, False)
        expr = plan.expression
        group = expr if isinstance(expr, LogicGroup) else LogicGroup(op="and", children=[expr])
        await run.update(node, plan=plan, logic=group.op)
        holder = node
        if cascade:  # the plan's steps under one group, apart from the attempt nodes
            holder = await run.new_node(
                kind="group", parent_id=node.id, position=len(run.children(node)),
                depth=node.depth + 1, goal=describe(group, plan.steps), logic=group.op,
                label="plan")
            await run.update(holder, status="running")
        children = await self.build(holder, group, plan.steps, node.depth + 1)
        ok = await self.run_children(group.op, children)
        if holder is not node:
            await self.finish(holder, ok)
        ok = await self.verify_decomposed(node, ok)
        if not ok and after and not run.episode_done:
            ok = (await self.escalate(node, task, 1)).success
        return await self.finish(node, ok)

    async def escalate(self, node: Node, task: str, start: int | None,
                       options: ExecuteOptions | None = None) -> ExecutionResult:
        """The model cascade on ``node``: one child ``task`` node per attempt (same goal and
        depth, label ``attempt N: <model>``), each with the next executor model from
        ``start`` on (``None``: the first model only), until one succeeds. A failed attempt
        is rolled back where the environment rolls back; the refuted attempt's evidence
        reaches the next one. The node records the deciding (last) attempt's outcome."""
        run = self.run
        env = run.env
        undo = undoable(env)
        models = run.executor_models
        numbers = [0] if start is None else list(range(start, len(models)))
        await run.update(node, status="running")
        if start in (0, None):  # already satisfied: no attempt at all (a later start had one)
            mark = claim_checks.mark(env) if run.config.verification == "env" else None
            self.marks[node.id] = mark
            done = await self.already_done(node, mark)
            if done is not None:
                return done
        result: ExecutionResult | None = None
        for number in numbers:
            if run.episode_done:
                break
            model = models[number]
            kid = await run.new_node(
                kind="task", parent_id=node.id, position=len(run.children(node)),
                depth=node.depth, goal=node.goal,
                label=f"attempt {number + 1}: {model.name}"[:255])
            undo_mark = undo.checkpoint() if undo is not None else None
            run.executor_model = model
            try:
                result = await self.try_executor(kid, task, options)
            finally:
                run.executor_model = models[0]
            # the node's goal is checked against the state its first attempt started from
            self.marks.setdefault(node.id, self.marks.get(kid.id))
            await self.finish(kid, result.success)
            if result.success:
                break
            if undo is not None and not run.episode_done:
                undo.rollback(undo_mark)
        if result is None:
            return ExecutionResult(False, None, run.reward, "done", 0)
        checked = result.checked
        await run.update(
            node, executor_success=result.success, self_assessed=result.self_assessed,
            claim=result.claim, verdict=None if checked is None else checked.verdict,
            evidence=None if checked is None else checked.evidence or None,
            reward=result.reward, termination=result.termination)
        return result

    async def verify_decomposed(self, node: Node, ok: bool) -> bool:
        """A decomposed node's outcome: the environment's verdict on its goal once its
        children ran, where it can decide it; else the logic combination ``ok``."""
        run = self.run
        if run.config.verification == "off":
            return ok
        check = claim_checks.check(run.env, node.goal, self.marks.get(node.id),
                                   reward=run.reward, episode_done=run.episode_done)
        if not check.checkable:
            return ok
        await run.update(node, verdict=check.verdict, evidence=check.evidence or None)
        return check.verdict == "confirmed"

    async def already_done(self, node: Node, mark: object | None) -> ExecutionResult | None:
        """With verification on: a goal the environment confirms before any executor run is
        recorded as done (``verified``, no call) and its result returned; else ``None``."""
        run = self.run
        if run.config.verification != "env":
            return None
        before = claim_checks.check(run.env, node.goal, mark, reward=run.reward,
                                    episode_done=run.episode_done)
        if before.verdict != "confirmed":
            return None
        await run.update(node, executor_success=True, verdict="confirmed",
                         evidence=before.evidence, termination="verified")
        return ExecutionResult(True, None, 0.0, "verified", 0)

    async def try_executor(self, node: Node, task: str,
                           options: ExecuteOptions | None = None) -> ExecutionResult:
        """Mark the node running, run the executor on it, record the outcome on the node.

        ``options``: a strategy's changes for this run (step budget, temperature, extra
        context); the node's ``context_in`` shows the context the executor got. With
        verification on, the environment checks the goal first (already satisfied: the node
        is skipped with no call) and the episode checks it during and after the run
        (``adapt.engine.claim_checks``)."""
        run = self.run
        extra = options.extra_context if options is not None else None
        context_in = run.context if extra is None else extra
        await run.update(node, status="running", context_in=context_in)
        if run.config.verification == "env":
            watch = Watch(node.id, node.goal, claim_checks.mark(run.env))
            self.marks[node.id] = watch.mark
            done = await self.already_done(node, watch.mark)
            if done is not None:
                return done
            run.watch = watch
            earlier = self.refuted.get(goal_key(node.goal))
            if earlier is not None:  # a retry of a refuted goal hears why the last one failed
                note = claim_checks.feedback(earlier)
                extra = note if extra is None else f"{extra}\n{note}"
                options = replace(options or ExecuteOptions(), extra_context=extra)
                await run.update(node, context_in="\n".join(x for x in (context_in, note) if x))
        try:
            result = await self.executor.execute(node, task, options)
        finally:
            run.watch = None
        checked = result.checked
        if checked is not None and checked.verdict == "refuted" and checked.evidence:
            self.refuted[goal_key(node.goal)] = checked.evidence
        await run.update(
            node, executor_success=result.success, self_assessed=result.self_assessed,
            claim=result.claim, verdict=None if checked is None else checked.verdict,
            evidence=None if checked is None else checked.evidence or None,
            reward=result.reward, termination=result.termination,
        )
        return result

    async def build(
        self, parent: Node, group: LogicGroup, steps: list[str], depth: int
    ) -> list[Node]:
        """Create (pending) child nodes for every operand of ``group``, recursively."""
        kids: list[Node] = []
        for position, child in enumerate(group.children):
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
        decided: bool | None = None
        ran_any = False
        for kid in kids:
            if decided is not None or run.episode_done:
                await self.skip(kid)
                continue
            ok = await (self.solve(kid) if kid.kind == "task" else self.run_group(kid))
            ran_any = True
            if op == "and" and not ok:
                decided = False
            elif op == "or" and ok:
                decided = True
        if decided is not None:
            return decided
        if run.episode_done and run.reward <= 0:
            return False
        # AND: every child that ran succeeded; OR: none succeeded (unless the episode ended
        # with a reward, which satisfies the goal).
        return (op == "and" and ran_any) or (run.episode_done and run.reward > 0)

    async def run_group(self, node: Node) -> bool:
        await self.run.update(node, status="running")
        ok = await self.run_children(node.logic or "and", self.run.children(node))
        return await self.finish(node, ok)

    async def finish(self, node: Node, ok: bool) -> bool:
        run = self.run
        fields: dict[str, object] = {"status": "succeeded" if ok else "failed", "success": ok}
        if ok and node.kind == "task":
            run.context = run.env.salient_state()
            fields["context_out"] = run.context
        await run.update(node, **fields)
        return ok

    async def skip(self, node: Node) -> None:
        for kid in self.run.children(node):
            await self.skip(kid)
        await self.run.update(node, status="skipped")
