"""Skill reuse in a run: replay a stored solution before the executor, learn verified ones.

:class:`Experience` is one run's side of the library (``adapt.engine.experience``). The node
runner asks it, before a task node's executor runs (with ``reuse.skills`` on and verification
on), to :meth:`~Experience.replay` a stored solution for the node's goal:

- the actions are sent to the live environment one by one, each recorded as a step of the node
  (``extra.replay``: the entry and its origin), stopping at the first failed observation or
  the end of the episode; no LLM is called;
- the environment then checks the node's goal against the state the node started from. A
  confirmed goal ends the node (termination ``reused``, ``Node.reused`` names the entry and
  where it was learned) and counts a use;
- a goal it does not confirm counts a failure for the entry (an entry that fails
  ``DROP_AFTER`` times in a row is dropped), the entry is not tried again in this run, and the
  executor runs as usual. The replayed actions changed the environment: an environment that
  rolls back (``RollsBack``) is returned to the state before the replay; any other keeps the
  changed state, which is the executor's start, and the executor is told so (the
  environment's salient state after the replay is added to its context). A replay that ended
  the episode ends the node (failed, termination ``done``): nothing is left to try.

After a node's executor run the environment confirmed, :meth:`~Experience.learn` keeps the
node's actions (its replayed ones and the executor's, in order: the goal is checked from the
node's start) as a new solution; after a decomposed node's goal is confirmed once its
children ran, :meth:`~Experience.learn_decomposed` keeps every action sent since the node
started (its whole subtree's). Everything is handed to the library once, when the task ends
(:meth:`~Experience.save`).

Plans (``reuse.plans``): before ADaPT calls the planner on a node, :meth:`~Experience.
stored_plan` looks up a stored plan for its goal (``Plan.reused`` says where it came from);
the controller takes it as the node's plan (``plans_mode`` ``reuse``, no planner call;
:meth:`~Experience.plan_taken`) or adds it to the planner's task (:func:`example`). Once the
node's children ran, :meth:`~Experience.decomposed` hears the environment's verdict: a taken
plan counts a use or a failure (demoted, as a failed replay), a plan of the node's own that
worked is learned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from adapt.engine import claim_checks
from adapt.engine.executors.base import ExecutionResult
from adapt.engine.experience import (
    MAX_ACTION_CHARS,
    MAX_ACTIONS,
    MAX_GOAL_CHARS,
    PLAN,
    ExperienceLibrary,
    ExperienceReport,
    Learned,
    Solution,
    key_of,
)
from adapt.engine.gated import act
from adapt.engine.planning import logic
from adapt.engine.tree import Node, Plan, Step, Termination
from adapt.envs.base import env_call, undoable
from adapt.errors import LogicSyntaxError

if TYPE_CHECKING:
    from adapt.engine.claim_checks import Watch
    from adapt.engine.runtime import Run

log = logging.getLogger(__name__)

#: what the executor hears after a replay the environment did not confirm
REPLAY_NOTE = ("A stored solution for this goal was replayed and the environment did not "
               "confirm it ({evidence}); {state}")
#: what the planner hears with ``reuse.plans_mode: "example"``
PLAN_EXAMPLE = ("A plan that worked for this goal before (the environment confirmed the goal "
                "once its steps ran); adapt it to what is held now:\n{plan}")


@dataclass(slots=True)
class Replay:
    """How a replay went: the node's result when the environment confirmed its goal; else
    the replayed steps whose effect stays in the environment (none when it rolled back) and
    the note for the executor (``None``: nothing was replayed)."""

    result: ExecutionResult | None = None
    steps: list[Step] = field(default_factory=list)
    note: str | None = None


class Experience:
    """One run's use of an :class:`ExperienceLibrary`."""

    def __init__(self, run: Run, library: ExperienceLibrary) -> None:
        self.run = run
        self.library = library
        self.report = ExperienceReport()
        #: entries that failed in this run (not tried again)
        self.failed: set[int] = set()
        #: what this run learned, by key: one solution per key, the longest (a longer one,
        #: e.g. a decomposed node's whole subtree, depends less on what siblings did before)
        self.learned: dict[str, Learned] = {}
        #: plans this run learned, by key (a decomposed node the environment confirmed)
        self.plans: dict[str, Learned] = {}
        #: decomposed nodes that took a stored plan (node id -> entry id; ``plans_mode``
        #: ``reuse``): the node's verdict counts a use or a failure for the entry
        self.plan_uses: dict[int, int] = {}
        #: the actions the run sent that did not fail, in order (``Run.add_step``), and where
        #: each node's part of it starts (node id -> index)
        self.log: list[str] = []
        self.starts: dict[int, int] = {}
        self.environment = str(getattr(run.env, "name", type(run.env).__name__))

    @property
    def skills(self) -> bool:
        run = self.run
        return run.config.reuse.skills and run.config.verification == "env"

    @property
    def reuses_plans(self) -> bool:
        run = self.run
        return run.config.reuse.plans and run.config.verification == "env"

    async def stored_plan(self, node: Node) -> Plan | None:
        """The stored plan for ``node``'s goal (``reuse.plans``), with ``reused`` saying where
        it came from and how it is used (``plans_mode``); ``None``: none (or plan reuse off)."""
        key = key_of(self.run.env, node.goal)
        if not self.reuses_plans or len(key) > MAX_GOAL_CHARS:
            return None
        found = await self.library.find(self.environment, key, frozenset(self.failed),
                                        kind=PLAN)
        if found is None or not found.actions:
            return None
        try:
            expression = (logic.parse(found.logic) if found.logic
                          else logic.all_and(len(found.actions)))
        except LogicSyntaxError:
            expression = None
        if expression is None or not all(
                1 <= i <= len(found.actions) for i in logic.step_indices(expression)):
            # an order that does not parse or names a step it lacks (an import): not used
            log.warning("library entry %d: execution order %r does not fit its %d steps",
                        found.id, found.logic, len(found.actions))
            return None
        steps = list(found.actions)
        text = "\n".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))
        order = logic.to_text(expression)
        return Plan(raw=f"{text}\nExecution Order: {order}", steps=steps,
                    expression=expression, expression_text=order,
                    reused={"mode": self.run.config.reuse.plans_mode, **origin(found)})

    def plan_taken(self, node: Node, plan: Plan) -> None:
        """``node`` runs ``plan``, a stored one taken as is: its verdict decides the entry."""
        if plan.reused is not None and plan.reused.get("mode") == "reuse":
            self.plan_uses[node.id] = int(plan.reused["entry"])

    def decomposed(self, node: Node, confirmed: bool) -> None:
        """The environment's verdict on a decomposed ``node`` once its children ran: a stored
        plan it took counts a use (confirmed) or a failure (not: demoted, not tried again in
        this run); a plan of its own that worked is learned (``reuse.plans``)."""
        entry = self.plan_uses.pop(node.id, None)
        if entry is not None:
            if confirmed:
                self.report.used.append(entry)
            else:
                self.report.failed.append(entry)
                self.failed.add(entry)
            return
        plan = node.plan
        if (not confirmed or not self.reuses_plans or plan is None or not plan.steps
                or plan.expression is None):
            return
        key = key_of(self.run.env, node.goal)
        steps = tuple(plan.steps)
        if (len(steps) > MAX_ACTIONS or len(key) > MAX_GOAL_CHARS
                or len(node.goal) > MAX_GOAL_CHARS
                or any(not s or len(s) > MAX_ACTION_CHARS for s in steps)
                or key in self.plans):
            return
        models = [self.run.planner_model]
        self.plans[key] = Learned(
            environment=self.environment, goal=node.goal, key=key, actions=steps,
            node_id=node.id, model=models[0].name[:1000],
            simulated=any(m.simulated for m in models), kind=PLAN,
            logic=logic.to_text(plan.expression))

    async def replay(self, node: Node, watch: Watch) -> Replay:
        """Replay a stored solution for ``node``'s goal (see the module's docstring)."""
        run = self.run
        key = key_of(run.env, node.goal)
        if not self.skills or run.episode_done or len(key) > MAX_GOAL_CHARS:
            return Replay()
        solution = await self.library.find(self.environment, key, frozenset(self.failed))
        if solution is None:
            return Replay()
        env = run.env
        undo = undoable(env)
        undo_mark = await env_call(env, undo.checkpoint) if undo is not None else None
        steps = await self._send(node, solution)
        verdict = await claim_checks.check(env, node.goal, watch.mark, reward=run.reward,
                                           episode_done=run.episode_done)
        best = max((s.reward for s in steps), default=0.0)
        done = any(s.done for s in steps)
        if verdict.verdict == "confirmed":
            self.report.used.append(solution.id)
            await run.update(node, reused=origin(solution))
            return Replay(ExecutionResult(True, None, best, Termination.REUSED, len(steps),
                                          steps, claim=None, checked=verdict, done=done), steps)
        self.report.failed.append(solution.id)
        self.failed.add(solution.id)
        if run.episode_done:  # the replay ended the episode: nothing is left to try
            return Replay(ExecutionResult(False, None, best, Termination.DONE, len(steps),
                                          steps, claim=None, checked=verdict, done=True), steps)
        evidence = verdict.evidence or f"verdict {verdict.verdict}"
        if undo is not None:
            await env_call(env, undo.rollback, undo_mark)
            state = "the environment was rolled back to the state before the replay."
            steps = []
        else:
            salient = await env_call(env, env.salient_state)
            state = ("the replayed actions changed the environment"
                     + (f"; it now holds: {salient}" if salient else "") + ".")
        return Replay(None, steps, REPLAY_NOTE.format(evidence=evidence, state=state))

    async def _send(self, node: Node, solution: Solution) -> list[Step]:
        run, env = self.run, self.run.env
        steps: list[Step] = []
        for action in solution.actions:
            # a replayed action is asked about where the task asks (``approval.actions``), as
            # the executor's are: a person's gate has no way around it
            result = await act(run, node, action)
            reward, done = float(result.reward), bool(result.done)
            step = Step(kind="action", node_id=node.id, index=node.steps_count + 1, raw=action,
                        text=action, observation=result.observation, reward=reward, done=done,
                        extra={"replay": origin(solution)})
            steps.append(step)
            await run.add_step(node, step)
            run.fold(reward, done)
            if done or env.is_failure(result.observation):
                break
        return steps

    def saw(self, step: Step) -> None:
        """A step the run recorded (every step passes here, replayed ones too)."""
        if step.kind == "action" and step.error is None and not self.run.env.is_failure(
                step.observation):
            self.log.append(step.text)

    def begin(self, node: Node) -> None:
        """``node`` starts: its actions are those the run sends from now on."""
        self.starts.setdefault(node.id, len(self.log))

    def learn_decomposed(self, node: Node) -> None:
        """A decomposed node whose goal the environment confirmed once its children ran:
        the actions sent since it started (its own executor run's and its sub-tasks', in
        order) are kept as the goal's solution, so a later task replays the whole subtree
        instead of an executor run, a plan and the sub-tasks. Not where failed sub-tasks are
        rolled back (the log would hold actions whose effect was undone)."""
        start = self.starts.get(node.id)
        if not self.skills or start is None or undoable(self.run.env) is not None:
            return
        self._keep(node, tuple(self.log[start:]))

    def learn(self, node: Node, steps: Sequence[Step], result: ExecutionResult) -> None:
        """Keep ``steps``' actions as the solution of ``node``'s goal when the environment
        confirmed it after an executor run (not a replay: that entry is the library's)."""
        checked = result.checked
        if (not self.skills or checked is None or checked.verdict != "confirmed"
                or not result.success or result.termination == Termination.REUSED):
            return
        self._keep(node, tuple(s.text for s in steps if s.kind == "action" and s.error is None
                               and not self.run.env.is_failure(s.observation)))

    def _keep(self, node: Node, actions: tuple[str, ...]) -> None:
        key = key_of(self.run.env, node.goal)
        if (not actions or len(actions) > MAX_ACTIONS or len(key) > MAX_GOAL_CHARS
                or len(node.goal) > MAX_GOAL_CHARS
                or any(len(a) > MAX_ACTION_CHARS for a in actions)):
            return
        earlier = self.learned.get(key)
        if earlier is not None and len(earlier.actions) >= len(actions):
            return
        models = self.run.executor_models
        self.learned[key] = Learned(
            environment=self.environment, goal=node.goal, key=key, actions=actions,
            node_id=node.id, model=models[0].name[:1000],
            simulated=any(m.simulated for m in models))

    async def save(self) -> None:
        """Hand what the run learned and how its replays went to the library. The task has
        ended by now: a library that cannot take it loses this run's experience (logged), and
        the task's result stands."""
        self.report.learned = [*self.learned.values(), *self.plans.values()]
        if not self.report:
            return
        try:
            await self.library.save(self.report)
        except Exception as exc:  # the finished task must not fail for it
            log.warning("the experience library did not take this task's experience "
                        "(%d solutions, %d uses, %d failures): %s: %s",
                        len(self.report.learned), len(self.report.used),
                        len(self.report.failed), type(exc).__name__, exc)


def origin(solution: Solution) -> dict[str, object]:
    """What a reused node says about its solution: the library entry and where it was
    learned (``task``, ``node``), and whether a simulated model found it."""
    return {"entry": solution.id, **solution.origin, "simulated": solution.simulated}


def example(plan: Plan) -> str:
    """What the planner is told with ``plans_mode: "example"``: the stored plan, its steps
    numbered and indented (not ``Step N:`` lines: at the end of the prompt, those read as the
    start of the planner's own answer, and a model continues them instead of planning)."""
    lines = [f"  {i}. {step}" for i, step in enumerate(plan.steps, 1)]
    lines.append(f"  in the order {plan.expression_text}")
    return PLAN_EXAMPLE.format(plan="\n".join(lines))


__all__ = ["PLAN_EXAMPLE", "REPLAY_NOTE", "Experience", "Replay", "example", "origin"]
