"""One executor run (an episode): the loop every executor shares, and the rules it applies.

An executor only decides what happens next: ``turns(episode)`` is an async generator that
yields one :class:`Turn` per decision (a model call and what it led to). The episode owns the
rest, written once here:

- the step budget (``max_steps``: what one unit is, the executor says with ``Turn.cost``; the
  ReAct and StateAct executors count steps, the spec executor LLM calls, StateFlow state visits);
- the context (the propagated salient state plus a strategy's extra context);
- recording: every step of a turn is numbered, appended to the node and kept in the result;
- the rules, in this order after each turn: the environment ended the episode (success if a
  reward > 0: ``reward`` / ``done``); a reward > 0 (``reward``); a self-assessed completion or
  failure (``completed`` / ``failed``); ``patience`` consecutive failed observations
  (``patience``); the executor's own ending (a final state, an answer); then the budget.

``Episode.conclude`` is the one place an ending becomes the ``ExecutionResult``. Verification
(``adapt.engine.claim_checks``; when the node runner watches this node, ``ExecuteOptions.watch``):
after every turn that does not end the run, a goal the environment confirms ends it
(``verified``, no claim); at the end, a claimed success the environment refutes becomes a
failure (``refuted``) and a claimed failure it confirms a success (``verified``). ``unknown``
keeps the claim.

The episode reads the run and writes only to the node (its steps): the model it calls
(``Episode.model``) and the watch come in its ``ExecuteOptions``; the environment's reward and
the end of the episode go out in the result (``reward``, ``done``), which the node runner
folds into the run.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from adapt.engine.claim_checks import Watch, check
from adapt.engine.config import ExecutorConfig
from adapt.engine.executors.base import THOUGHT_OK, ExecuteOptions, ExecutionResult
from adapt.engine.tree import Step, Termination
from adapt.envs.verdicts import Verification

if TYPE_CHECKING:
    from adapt.engine.runtime import Run
    from adapt.engine.tree import Node
    from adapt.llm.base import ChatModel

_COMPLETED = re.compile(r"task\s+completed", re.IGNORECASE)
_FAILED = re.compile(r"task\s+failed", re.IGNORECASE)


def declaration(text: str) -> bool | None:
    """True: ``text`` says the task is completed; False: that it failed; None: neither."""
    if _COMPLETED.search(text):
        return True
    if _FAILED.search(text):
        return False
    return None


@dataclass(slots=True, frozen=True)
class Ending:
    success: bool
    self_assessed: bool | None
    termination: Termination


@dataclass(slots=True)
class Turn:
    """What one decision of an executor produced.

    ``steps`` are recorded in order (the episode numbers them). ``rewards`` / ``done`` are the
    environment's answers to the actions taken (default: those of the steps); ``failures`` one
    flag per observation for ``patience`` (default: per step, a failed observation, ``OK.`` or
    a step error); ``declared`` a self-assessment; ``end`` the executor's own ending; ``cost``
    the budget units used (charged when the turn is taken).
    """

    steps: list[Step] = field(default_factory=list)
    rewards: list[float] | None = None
    done: bool | None = None
    failures: list[bool] | None = None
    declared: bool | None = None
    end: Ending | None = None
    cost: int = 1
    #: the same decision goes on with the next turn (e.g. the environment's answer to what the
    #: model wrote): the budget is checked only after a turn that does not continue
    continues: bool = False


class Episode:
    def __init__(self, run: Run, node: Node, task: str, *, max_steps: int, patience: int | None,
                 options: ExecuteOptions | None = None,
                 budget_termination: Termination = Termination.MAX_STEPS) -> None:
        options = options or ExecuteOptions()
        self.run = run
        self.env = run.env
        self.node = node
        self.task = task
        self.max_steps = max_steps
        self.patience = patience
        self.budget_termination = budget_termination
        self.temperature = (options.temperature if options.temperature is not None
                            else run.config.executor.temperature)
        #: the model this run calls (a cascade attempt's, else the run's default)
        self.model: ChatModel = options.model or run.executor_model
        #: the node the environment checks after every turn, when it is this one
        self.watch: Watch | None = (options.watch if options.watch is not None
                                    and options.watch.node_id == node.id else None)
        self.context: str | None = run.context if options.extra_context is None else "\n".join(
            x for x in (run.context, options.extra_context) if x)
        self.steps: list[Step] = []
        #: steps the node holds already (a replay's before the executor): numbered after them
        self.first_index = node.steps_count
        self.used = 0
        self.best_reward = 0.0
        #: the environment ended the episode during this run
        self.done = False
        self.bad_streak = 0

    # -- what executors use ----------------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self.max_steps - self.used

    def step(self, **fields: object) -> Step:
        """A new step of this node (numbered when it is recorded)."""
        return Step(node_id=self.node.id, index=self.first_index + len(self.steps) + 1,
                    **fields)

    def is_failure(self, step: Step) -> bool:
        return (step.error is not None or step.observation == THOUGHT_OK
                or self.env.is_failure(step.observation))

    def judge(self, turn: Turn) -> Ending | None:
        """How the rules end the run after ``turn`` (``None``: they do not); no side effects."""
        rewards = turn.rewards if turn.rewards is not None else [s.reward for s in turn.steps]
        done = turn.done if turn.done is not None else any(s.done for s in turn.steps)
        best = max(rewards, default=0.0)
        if done:
            return Ending(best > 0, None, Termination.REWARD if best > 0 else Termination.DONE)
        if best > 0:
            return Ending(True, None, Termination.REWARD)
        if turn.declared is not None:
            return Ending(turn.declared, turn.declared,
                          Termination.COMPLETED if turn.declared else Termination.FAILED)
        if self.patience is not None and self._streak(turn) >= self.patience:
            return Ending(False, None, Termination.PATIENCE)
        return turn.end

    # -- the loop ----------------------------------------------------------------------------
    async def play(self, turns: AsyncGenerator[Turn, None]) -> ExecutionResult:
        try:
            checkpoint = True
            while not checkpoint or self.used < self.max_steps:
                turn = await anext(turns, None)
                if turn is None:
                    break
                ending = self.judge(turn)
                await self._apply(turn)
                if ending is not None:
                    return await self.conclude(ending)
                confirmed = await self._confirmed()
                if confirmed is not None:
                    return self._result(Ending(True, None, Termination.VERIFIED), None, confirmed)
                checkpoint = not turn.continues
        finally:
            await turns.aclose()
        return await self.conclude(Ending(False, None, self.budget_termination))

    async def _apply(self, turn: Turn) -> None:
        self.bad_streak = self._streak(turn)
        self.used += turn.cost
        for step in turn.steps:
            step.index = self.first_index + len(self.steps) + 1
            self.steps.append(step)
            await self.run.add_step(self.node, step)
        rewards = turn.rewards if turn.rewards is not None else [s.reward for s in turn.steps]
        self.best_reward = max(self.best_reward, max(rewards, default=0.0))
        if turn.done if turn.done is not None else any(s.done for s in turn.steps):
            self.done = True

    def _streak(self, turn: Turn) -> int:
        flags = (turn.failures if turn.failures is not None
                 else [self.is_failure(s) for s in turn.steps])
        streak = self.bad_streak
        for bad in flags:
            streak = streak + 1 if bad else 0
        return streak

    async def _check(self, watch: Watch) -> Verification:
        """The verdict on the watched goal, with what the episode said so far (the run's
        state before this run, and this run's rewards and end)."""
        return await check(self.env, watch.goal, watch.mark,
                           reward=max(self.run.reward, self.best_reward),
                           episode_done=self.run.episode_done or self.done)

    async def _confirmed(self) -> Verification | None:
        """The environment's confirmation of the watched goal after a turn, if it gives one."""
        watch = self.watch
        if watch is None:
            return None
        verdict = await self._check(watch)
        return verdict if verdict.verdict == "confirmed" else None

    async def conclude(self, ending: Ending) -> ExecutionResult:
        """The run's result: the ending, checked against the environment when the node is
        watched (verification): one place, every executor."""
        claim = ending.success
        watch = self.watch
        if watch is None:
            return self._result(ending, claim, None)
        verdict = await self._check(watch)
        if verdict.verdict == "refuted" and ending.success:
            ending = Ending(False, ending.self_assessed, Termination.REFUTED)
        elif verdict.verdict == "confirmed" and not ending.success:
            ending = Ending(True, ending.self_assessed, Termination.VERIFIED)
        return self._result(ending, claim, verdict)

    def _result(self, ending: Ending, claim: bool | None,
                checked: Verification | None) -> ExecutionResult:
        return ExecutionResult(ending.success, ending.self_assessed, self.best_reward,
                               ending.termination, len(self.steps), list(self.steps),
                               claim=claim, checked=checked, done=self.done)


class EpisodeExecutor:
    """Base of the executors: runs the shared episode over the turns ``turns`` yields.

    ``config_model``: the executor's settings, what ``executor`` holds when ``executor.kind``
    names this executor; a subclass of ``ExecutorConfig`` that adds the executor's own fields
    (read them with ``config_as(self.run.config.executor, MyConfig)``)."""

    config_model: ClassVar[type[ExecutorConfig]] = ExecutorConfig

    #: the termination when the step budget is used up
    budget_termination: ClassVar[Termination] = Termination.MAX_STEPS

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        self.run = run
        self.default_max_steps = max_steps  # this executor's budget unless a run overrides it

    def step_budget(self, options: ExecuteOptions) -> int:
        return (options.max_steps or self.default_max_steps
                or self.run.config.executor.max_steps or self.run.env.default_max_steps)

    @property
    def max_steps(self) -> int:
        """The step budget without a strategy's override."""
        return self.step_budget(ExecuteOptions())

    async def execute(self, node: Node, task: str,
                      options: ExecuteOptions | None = None) -> ExecutionResult:
        options = options or ExecuteOptions()
        episode = Episode(self.run, node, task, max_steps=self.step_budget(options),
                          patience=self.run.config.executor.patience, options=options,
                          budget_termination=self.budget_termination)
        return await episode.play(self.turns(episode))

    def turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        raise NotImplementedError
