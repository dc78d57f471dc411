"""The node runner: tries one task node, the same way under every strategy.

Trying a node is: mark it running, let the environment check its goal first (already
satisfied: the node is done with no call), run the executor with the options of this run,
record the outcome on the node, fold what the environment said (reward, end of the episode)
into the run, and finish the node (success hands the environment's salient state on).
Strategies decide which nodes to try and in what order; ADaPT (Algorithm 1) is one of them
(``strategies/controller.py``).

Per-run choices travel in ``ExecuteOptions``: a strategy's (step budget, temperature, extra
context), and the runner's own (the model of a cascade attempt, the node the environment
watches). The runner never assigns to the run: it calls ``Run.update`` / ``Run.new_node`` for
nodes and ``Run.fold`` / ``Run.carry`` for the episode's state. Its own state is the
verification marks of the nodes it started and the refutation evidence per goal.
"""

from __future__ import annotations

from dataclasses import replace

from adapt.engine import claim_checks
from adapt.engine.claim_checks import Watch
from adapt.engine.executors import make_executor
from adapt.engine.executors.base import ExecuteOptions, ExecutionResult, Executor
from adapt.engine.experience import goal_key
from adapt.engine.runtime import Run
from adapt.engine.tree import Node, Step, Termination
from adapt.envs.base import env_call, undoable


class NodeRunner:
    """Tries task nodes with one executor (default: the one ``executor.kind`` names)."""

    def __init__(self, run: Run, executor: Executor | None = None) -> None:
        self.run = run
        self.executor = executor if executor is not None else make_executor(run)
        #: verification marks taken when task nodes started (node id -> mark)
        self.marks: dict[int, object | None] = {}
        #: the latest refutation evidence per goal, for the next attempt at the same goal
        self.refuted: dict[str, str] = {}

    async def execute(self, node: Node, task: str,
                      options: ExecuteOptions | None = None) -> ExecutionResult:
        """Mark the node running, run the executor on it, record the outcome on the node.

        ``options``: a strategy's choices for this run (step budget, temperature, extra
        context, the model); the node's ``context_in`` shows the context the executor got.
        With verification on, the environment checks the goal first (already satisfied: the
        node is done with no call) and the episode checks it during and after the run
        (``options.watch``; ``adapt.engine.claim_checks``)."""
        run = self.run
        extra = options.extra_context if options is not None else None
        context_in = run.context if extra is None else extra
        await run.update(node, status="running", context_in=context_in)
        if run.experience is not None:
            run.experience.begin(node)
        replayed: list[Step] = []  # what a replay that failed left in the environment
        if run.config.verification == "env":
            watch = Watch(node.id, node.goal, claim_checks.mark(run.env))
            self.marks[node.id] = watch.mark
            done = await self.already_done(node, watch.mark)
            if done is not None:
                return done
            earlier = self.refuted.get(goal_key(node.goal))
            if earlier is not None:  # a retry of a refuted goal hears why the last one failed
                note = claim_checks.feedback(earlier)
                extra = note if extra is None else f"{extra}\n{note}"
                options = replace(options or ExecuteOptions(), extra_context=extra)
                await run.update(node, context_in="\n".join(x for x in (context_in, note) if x))
            options = replace(options or ExecuteOptions(), watch=watch)
            reused, replayed, options = await self.replay(node, watch, options)
            if reused is not None:
                await self.record(node, reused)
                return reused
        result = await self.executor.execute(node, task, options)
        run.fold(result.reward, result.done)
        checked = result.checked
        if checked is not None and checked.verdict == "refuted" and checked.evidence:
            self.refuted[goal_key(node.goal)] = checked.evidence
        if run.experience is not None:
            run.experience.learn(node, replayed + result.trajectory, result)
        await self.record(node, result)
        return result

    async def replay(self, node: Node, watch: Watch, options: ExecuteOptions
                     ) -> tuple[ExecutionResult | None, list[Step], ExecuteOptions]:
        """A stored solution replayed on ``node`` (``reuse.skills``; ``adapt.engine.reuse``):
        the node's result when the environment confirmed its goal; else ``None``, the steps
        the replay left on the node, and the options with what the executor is told about
        it."""
        experience = self.run.experience
        if experience is None:
            return None, [], options
        replay = await experience.replay(node, watch)
        if replay.result is not None or replay.note is None:
            return replay.result, replay.steps, options
        note = replay.note
        extra = note if options.extra_context is None else f"{options.extra_context}\n{note}"
        await self.run.update(node, context_in="\n".join(
            x for x in (node.context_in, note) if x))
        return None, replay.steps, replace(options, extra_context=extra)

    async def record(self, node: Node, result: ExecutionResult) -> None:
        """The executor run's outcome on ``node``: its claim, the environment's verdict."""
        checked = result.checked
        await self.run.update(
            node, executor_success=result.success, self_assessed=result.self_assessed,
            claim=result.claim, verdict=None if checked is None else checked.verdict,
            evidence=None if checked is None else checked.evidence or None,
            reward=result.reward, termination=result.termination,
        )

    async def cascade(self, node: Node, task: str, start: int | None,
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
        if run.experience is not None:
            run.experience.begin(node)
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
            undo_mark = await env_call(env, undo.checkpoint) if undo is not None else None
            result = await self.execute(kid, task, replace(options or ExecuteOptions(),
                                                           model=model))
            # the node's goal is checked against the state its first attempt started from
            self.marks.setdefault(node.id, self.marks.get(kid.id))
            await self.finish(kid, result.success)
            if result.success:
                break
            if undo is not None and not run.episode_done:
                await env_call(env, undo.rollback, undo_mark)
        if result is None:
            return ExecutionResult(False, None, run.reward, Termination.DONE, 0)
        await self.record(node, result)
        return result

    async def check_decomposed(self, node: Node, ok: bool) -> bool:
        """A decomposed node's outcome: the environment's verdict on its goal once its
        children ran, where it can decide it; else the logic combination ``ok``."""
        run = self.run
        if run.config.verification == "off":
            return ok
        check = await claim_checks.check(run.env, node.goal, self.marks.get(node.id),
                                         reward=run.reward, episode_done=run.episode_done)
        if not check.checkable:
            return ok
        await run.update(node, verdict=check.verdict, evidence=check.evidence or None)
        if run.experience is not None:
            run.experience.decomposed(node, check.verdict == "confirmed")
            if check.verdict == "confirmed":
                run.experience.learn_decomposed(node)
        return check.verdict == "confirmed"

    async def already_done(self, node: Node, mark: object | None) -> ExecutionResult | None:
        """With verification on: a goal the environment confirms before any executor run is
        recorded as done (``verified``, no call) and its result returned; else ``None``."""
        run = self.run
        if run.config.verification != "env":
            return None
        before = await claim_checks.check(run.env, node.goal, mark, reward=run.reward,
                                          episode_done=run.episode_done)
        if before.verdict != "confirmed":
            return None
        await run.update(node, executor_success=True, verdict="confirmed",
                         evidence=before.evidence, termination=Termination.VERIFIED)
        return ExecutionResult(True, None, 0.0, Termination.VERIFIED, 0)

    async def finish(self, node: Node, ok: bool) -> bool:
        """End ``node`` as succeeded or failed; a task node's success hands the
        environment's salient state on to later prompts."""
        run = self.run
        fields: dict[str, object] = {"status": "succeeded" if ok else "failed", "success": ok}
        if ok and node.kind == "task":
            run.carry(await env_call(run.env, run.env.salient_state))
            fields["context_out"] = run.context
        await run.update(node, **fields)
        return ok

    async def skip(self, node: Node, reason: str | None = None) -> None:
        """Mark ``node`` and everything under it skipped (not run), saying why."""
        for kid in self.run.children(node):
            await self.skip(kid, reason)
        await self.run.update(node, status="skipped", reason=reason)
