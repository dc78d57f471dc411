"""The spec executor (kind ``spec``): an agent defined by a declarative behaviour specification.

Select it with ``RunConfig(executor={"kind": "spec", "spec": "pass"})``; ``spec`` is a shipped
agent (react, rewoo, reflexion, cot, direct, pass; ``adapt.engine.spec``) or a whole spec text.
See docs/agent-library.md.

The prompt is the instructions (from the spec's states and the environment's actions), matching
few-shot examples (``adapt.engine.executors.spec_agent.prompt``) and the trace, which starts with the first
state's prompt and the task (``[Question] <task>``). The model writes the trace under the
decoding monitor (``RunConfig.monitor``; when disabled the same loop runs without corrections)
until an environment-supplied state is due (generation stops at its prompt, and at the first
state's prompt when the behaviour never returns to it), which the executor supplies by its name
(``adapt.engine.executors.spec_agent.states``):

- ``Obs``: the action written before it (``f"{Act} {Act-Inp}"``) runs; its observation;
- ``Eval``: the ``Prop-Ans`` is checked with the environment's ``answer_action`` (if it has one
  and the node is the environment's own task); a correct answer ends the run;
- ``Solver`` (ReWOO): every planned action runs in order, earlier labels (``#E1``) in later
  inputs replaced by their results; then one ``solver`` call answers from the evidence;
- ``Sum`` (PASS): the actions since the last ``Plan`` run concurrently where the environment
  allows (``adapt.engine.executors.spec_agent.actions``); a ``summarizer`` call condenses them and
  ``executor.pass_output`` picks the summary or the raw results (``adapt.engine.executors.spec_agent.pass_output``);
- any other: the actions written since the last supplied state run in order; their results.

When the behaviour is complete, the last state's text is the answer. With an ``answer_action``
(and the node being the environment's own task) it is submitted (``answer 31``) and the reward
decides. Otherwise it is a self-assessment as in the ReAct executor: ``Task completed!`` is
success, ``Task failed!`` failure, anything else ends the run unconfirmed (``answered``).

Rules shared with ReAct: a reward > 0 or the episode ending ends the run at once; ``patience``
consecutive failed observations or invalid outputs fail it; ``max_steps`` bounds the LLM calls
(generation chunks, corrections, solver and summarizer calls).
"""

from __future__ import annotations

import re
from typing import Any

from adapt.engine.executors.base import ExecutionResult
from adapt.engine.executors.spec_agent.actions import ACTION_STATES, PlannedAction, planned_actions
from adapt.engine.executors.spec_agent.prompt import header, neutralize
from adapt.engine.executors.spec_agent.states import HANDLERS, observe
from adapt.engine.runtime import Run
from adapt.engine.spec.generate import Annotate, Generation, monitored_generate
from adapt.engine.spec.model import Spec, StateDef, load_spec
from adapt.engine.spec.monitor import Monitor, Segment
from adapt.engine.tree import Node, Step
from adapt.envs.base import StepResult
from adapt.llm.base import ChatRequest, ChatResponse

_COMPLETED = re.compile(r"task\s+completed", re.IGNORECASE)
_FAILED = re.compile(r"task\s+failed", re.IGNORECASE)


class SpecExecutor:
    """Runs one (sub-)task with the agent ``run.config.executor.spec``."""

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        self.run = run
        cfg = run.config.executor
        self.spec: Spec = load_spec(cfg.spec)
        self.monitor = Monitor(self.spec)
        self.max_steps = max_steps or cfg.max_steps or run.env.default_max_steps
        self.patience = cfg.patience
        first = self.spec.fsm.next_names(self.spec.fsm.start)
        self.first: StateDef = next(s for s in self.spec.states if s.name in first)
        fsm = self.spec.fsm
        again = any(self.first.name in moves for q, moves in enumerate(fsm.transitions)
                    if q != fsm.start)
        #: the task's state is supplied once: a model that starts another one (a made-up next
        #: question) is stopped there rather than corrected at the cost of another call
        self.stop: list[str] = [] if again else [self.first.text]

    async def execute(self, node: Node, task: str, extra_context: str | None = None
                      ) -> ExecutionResult:
        run = self.run
        context = run.context if extra_context is None else "\n".join(
            x for x in (run.context, extra_context) if x)
        return await Episode(self, node, task, context).play()


class Episode:
    """One execution: the trace, the steps recorded, the counters."""

    def __init__(self, executor: SpecExecutor, node: Node, task: str, context: str | None
                 ) -> None:
        self.max_steps = executor.max_steps
        self.patience = executor.patience
        self.stop = executor.stop
        self.run = executor.run
        self.env = executor.run.env
        self.spec = executor.spec
        self.monitor = executor.monitor
        self.node = node
        self.task = task
        answer_action = getattr(type(self.env), "answer_action", None)
        #: the final answer is submitted to the environment (its own task, not a sub-task)
        self.answer_action: str | None = answer_action if node.goal == self.env.goal else None
        self.header = header(self.spec, self.env, self.monitor,
                             checkable=self.answer_action is not None)
        question = task.strip() + (f"\n{context.strip()}" if context else "")
        self.trace = f"{executor.first.text} {neutralize(self.monitor, question)}\n"
        self.recorded = len(self.monitor.split(self.trace))  # segments recorded or skipped
        self.calls = 0
        self.index = 0
        self.best_reward = 0.0
        self.bad_streak = 0

    # -- the loop -------------------------------------------------------------------------
    async def play(self) -> ExecutionResult:
        cfg = self.run.config
        monitored = cfg.monitor.enabled
        request = ChatRequest(prompt=self.header, stop=self.stop,
                              max_tokens=cfg.executor.max_tokens,
                              temperature=cfg.executor.temperature, role="executor")

        async def call(req: ChatRequest, annotate: Annotate) -> ChatResponse:
            return await self.run.call(self.run.executor_model, req, self.node,
                                       annotate=annotate if monitored else None)

        while True:
            remaining = self.max_steps - self.calls
            if remaining <= 0:
                return self.result(False, None, "max_steps")
            gen = await monitored_generate(
                call, request, self.monitor, trace=self.trace,
                max_corrections=cfg.monitor.max_corrections if monitored else 0,
                max_chunks=remaining)
            self.calls += len(gen.responses)
            if gen.finish == "gave_up":
                outcome = await self.invalid(gen)
            elif gen.finish == "max_chunks":
                self.trace += gen.text
                await self.record_written(last=False)
                continue
            else:
                self.trace += gen.text
                if gen.finish == "complete":
                    await self.record_written(last=False)
                    return await self.final_answer()
                await self.record_written(last=True)
                outcome = await self.supply(self.spec.state(gen.check.awaiting[0]))
            if outcome is not None:
                return outcome

    def result(self, success: bool, self_assessed: bool | None, termination: str
               ) -> ExecutionResult:
        return ExecutionResult(success, self_assessed, self.best_reward, termination,
                               self.index)

    # -- steps ----------------------------------------------------------------------------
    async def add_step(self, kind: str, text: str, raw: str, observation: str = "", *,
                       reward: float = 0.0, done: bool = False, error: str | None = None,
                       **extra: Any) -> None:
        self.index += 1
        step = Step(kind="action" if kind == "action" else "thought", node_id=self.node.id,
                    index=self.index, raw=raw, text=text, observation=observation,
                    reward=reward, done=done, error=error, extra=extra)
        await self.run.add_step(self.node, step)

    async def record_written(self, *, last: bool) -> None:
        """Record the model-written states not recorded yet (``last``: the final one too; it
        may still be growing otherwise). Actions are recorded when they run."""
        segments = self.monitor.split(self.trace)
        end = len(segments) if last else len(segments) - 1
        for seg in segments[self.recorded:end]:
            if seg.state is None or seg.state in ACTION_STATES:
                continue
            if self.spec.state(seg.state).env_input:
                continue
            await self.add_step("thought", seg.content(self.trace).strip(),
                                self.trace[seg.start:seg.end], state=seg.state)
        self.recorded = max(self.recorded, end)

    def append(self, state: StateDef, content: str) -> None:
        """Add an environment-supplied state to the trace."""
        text = neutralize(self.monitor, content.strip()) or "(nothing)"
        if self.trace and not self.trace.endswith("\n"):
            self.trace += "\n"
        self.trace += f"{state.text} {text}\n"
        self.recorded = len(self.monitor.split(self.trace))

    def last_supplied_end(self, segments: list[Segment]) -> int:
        """Where the text after the last environment-supplied state (or the task) starts."""
        end = segments[0].end if segments else 0
        for seg in segments:
            if seg.state is not None and self.spec.state(seg.state).env_input:
                end = seg.end
        return end

    def pending_actions(self) -> list[PlannedAction]:
        start = self.last_supplied_end(self.monitor.split(self.trace))
        return planned_actions(self.monitor, self.trace, start)

    async def outcome_of(self, results: list[StepResult]) -> ExecutionResult | None:
        """ReAct's rules after actions ran: reward or the episode's end stops the run; a
        streak of failures as long as ``patience`` fails it."""
        rewards = [float(r.reward) for r in results]
        best = max(rewards, default=0.0)
        self.best_reward = max(self.best_reward, best)
        if best > 0:
            self.run.reward = max(self.run.reward, best)
        if any(r.done for r in results):
            self.run.episode_done = True
            return self.result(best > 0, None, "reward" if best > 0 else "done")
        if best > 0:
            return self.result(True, None, "reward")
        bad = bool(results) and all(self.env.is_failure(r.observation) for r in results)
        return self.count_bad(bad)

    def count_bad(self, bad: bool) -> ExecutionResult | None:
        self.bad_streak = self.bad_streak + 1 if bad else 0
        if self.bad_streak >= self.patience:
            return self.result(False, None, "patience")
        return None

    # -- environment-supplied states --------------------------------------------------------
    async def supply(self, state: StateDef) -> ExecutionResult | None:
        handler = HANDLERS.get(state.name, observe)
        outcome = await handler(self, state)
        if outcome is not None:
            return outcome
        check = self.monitor.check(self.trace)
        if check.complete and not check.next_states:  # e.g. ReWOO after its solver
            return await self.final_answer()
        return None

    async def run_one(self, state: StateDef, planned: PlannedAction, action: str | None = None,
                      **extra: Any) -> StepResult:
        action = action if action is not None else planned.action
        result = self.env.step(action)
        await self.add_step("action", action, planned.raw, result.observation,
                            reward=float(result.reward), done=result.done, state=state.name,
                            action=planned.name, input=planned.argument, **extra)
        return result

    # -- the end --------------------------------------------------------------------------
    async def final_answer(self) -> ExecutionResult:
        segments = self.monitor.split(self.trace)
        last = segments[-1]
        name = last.state or ""
        answer = last.content(self.trace).strip()
        raw = self.trace[last.start:last.end]
        self.recorded = len(segments)
        if self.answer_action is not None:
            planned = PlannedAction(self.answer_action, answer, raw=raw)
            result = self.env.step(planned.action)
            reward = float(result.reward)
            await self.add_step("action", planned.action, raw, result.observation,
                                reward=reward, done=result.done, state=name, answer=answer)
            self.best_reward = max(self.best_reward, reward)
            if reward > 0:
                self.run.reward = max(self.run.reward, reward)
            if result.done:
                self.run.episode_done = True
            if reward > 0:
                return self.result(True, None, "reward")
            return self.result(False, None, "done" if result.done else "incorrect")
        await self.add_step("thought", answer, raw, state=name, answer=answer)
        if self.best_reward > 0:
            return self.result(True, None, "reward")
        if _COMPLETED.search(answer):
            return self.result(True, True, "completed")
        if _FAILED.search(answer):
            return self.result(False, False, "failed")
        return self.result(False, None, "answered")

    async def invalid(self, gen: Generation) -> ExecutionResult | None:
        """The monitor could not (or may not) correct the output: keep its valid part, record
        the invalid output, count it toward ``patience``."""
        check = gen.check
        kept = check.kept
        if len(kept) > len(self.trace):
            final = self.monitor.check(kept, final=True)
            if final.valid and final.complete and not final.next_states:
                # text after the final state: the answer stands, the rest is dropped
                self.trace = kept
                await self.record_written(last=False)
                return await self.final_answer()
            self.trace = kept
            # cut at a state boundary, the last state kept is finished; a bad content keeps
            # only its state's prompt, for the model to write again
            await self.record_written(last=check.kind not in ("bad_content", "empty_content"))
        await self.add_step("thought", "", gen.text, error=check.violation or "invalid output",
                            state=None, violation=check.kind)
        return self.count_bad(True)


__all__ = ["SpecExecutor"]
