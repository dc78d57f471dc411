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

from collections.abc import AsyncGenerator
from typing import Any, ClassVar

from adapt.engine.config import ExecutorConfig, config_as
from adapt.engine.executors.episode import Ending, Episode, EpisodeExecutor, Turn, declaration
from adapt.engine.executors.spec_agent.actions import ACTION_STATES, PlannedAction, planned_actions
from adapt.engine.executors.spec_agent.config import SpecConfig
from adapt.engine.executors.spec_agent.prompt import header, neutralize
from adapt.engine.executors.spec_agent.states import HANDLERS, observe
from adapt.engine.runtime import Run
from adapt.engine.spec.generate import Annotate, Generation, monitored_generate
from adapt.engine.spec.model import Spec, StateDef, load_spec
from adapt.engine.spec.monitor import Monitor, Segment
from adapt.engine.tree import Step, Termination
from adapt.envs.base import StepResult, answer_action, step_async
from adapt.llm.base import ChatRequest, ChatResponse


class SpecExecutor(EpisodeExecutor):
    """Runs one (sub-)task with the agent ``run.config.executor.spec``."""

    config_model: ClassVar[type[ExecutorConfig]] = SpecConfig

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        super().__init__(run, max_steps=max_steps)
        self.cfg = config_as(run.config.executor, SpecConfig)
        self.spec: Spec = load_spec(self.cfg.spec)
        self.monitor = Monitor(self.spec)
        first = self.spec.fsm.next_names(self.spec.fsm.start)
        self.first: StateDef = next(s for s in self.spec.states if s.name in first)
        fsm = self.spec.fsm
        again = any(self.first.name in moves for q, moves in enumerate(fsm.transitions)
                    if q != fsm.start)
        #: the task's state is supplied once: a model that starts another one (a made-up next
        #: question) is stopped there rather than corrected at the cost of another call
        self.stop: list[str] = [] if again else [self.first.text]

    async def turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        trace = Trace(self, episode)
        cfg = self.run.config
        monitored = cfg.monitor.enabled
        request = ChatRequest(prompt=trace.header, stop=self.stop,
                              max_tokens=cfg.executor.max_tokens,
                              temperature=episode.temperature, role="executor")

        async def call(req: ChatRequest, annotate: Annotate) -> ChatResponse:
            return await self.run.call(episode.model, req, episode.node,
                                       annotate=annotate if monitored else None)

        while True:
            gen = await monitored_generate(
                call, request, self.monitor, trace=trace.text,
                max_corrections=cfg.monitor.max_corrections if monitored else 0,
                max_chunks=episode.remaining)
            cost = len(gen.responses)
            if gen.finish == "gave_up":
                yield await trace.invalid(gen, cost)
                continue
            trace.text += gen.text
            if gen.finish == "max_chunks":
                yield trace.written(last=False, cost=cost)
                continue
            if gen.finish == "complete":
                yield trace.written(last=False, cost=cost, continues=True)
                yield await trace.final_answer()
                return
            yield trace.written(last=True, cost=cost, continues=True)
            async for turn in trace.supply(self.spec.state(gen.check.awaiting[0])):
                yield turn


class Trace:
    """The text of one execution (the trace the model continues) and the steps it makes."""

    def __init__(self, executor: SpecExecutor, episode: Episode) -> None:
        self.episode = episode
        self.run = executor.run
        self.env = executor.run.env
        self.spec = executor.spec
        self.monitor = executor.monitor
        self.node = episode.node
        self.task = episode.task
        #: the final answer is submitted to the environment (its own task, not a sub-task)
        self.answer_action: str | None = (answer_action(self.env)
                                          if self.node.goal == self.env.goal else None)
        self.header = header(self.spec, self.env, self.monitor,
                             checkable=self.answer_action is not None)
        context = episode.context
        question = self.task.strip() + (f"\n{context.strip()}" if context else "")
        self.text = f"{executor.first.text} {neutralize(self.monitor, question)}\n"
        self.recorded = len(self.monitor.split(self.text))  # segments recorded or skipped

    # -- steps ----------------------------------------------------------------------------
    def step(self, kind: str, text: str, raw: str, observation: str = "", *,
             reward: float = 0.0, done: bool = False, error: str | None = None,
             **extra: Any) -> Step:
        return self.episode.step(kind="action" if kind == "action" else "thought", raw=raw,
                                 text=text, observation=observation, reward=reward, done=done,
                                 error=error, extra=extra)

    def written(self, *, last: bool, cost: int = 0, continues: bool = False) -> Turn:
        """The model-written states not recorded yet (``last``: the final one too; it may
        still be growing otherwise), as thought steps. Actions are recorded when they run."""
        segments = self.monitor.split(self.text)
        end = len(segments) if last else len(segments) - 1
        steps: list[Step] = []
        for seg in segments[self.recorded:end]:
            if seg.state is None or seg.state in ACTION_STATES:
                continue
            if self.spec.state(seg.state).env_input:
                continue
            steps.append(self.step("thought", seg.content(self.text).strip(),
                                   self.text[seg.start:seg.end], state=seg.state))
        self.recorded = max(self.recorded, end)
        return Turn(steps, rewards=[], done=False, failures=[], cost=cost, continues=continues)

    def append(self, state: StateDef, content: str) -> None:
        """Add an environment-supplied state to the trace."""
        text = neutralize(self.monitor, content.strip()) or "(nothing)"
        if self.text and not self.text.endswith("\n"):
            self.text += "\n"
        self.text += f"{state.text} {text}\n"
        self.recorded = len(self.monitor.split(self.text))

    def last_supplied_end(self, segments: list[Segment]) -> int:
        """Where the text after the last environment-supplied state (or the task) starts."""
        end = segments[0].end if segments else 0
        for seg in segments:
            if seg.state is not None and self.spec.state(seg.state).env_input:
                end = seg.end
        return end

    def pending_actions(self) -> list[PlannedAction]:
        start = self.last_supplied_end(self.monitor.split(self.text))
        return planned_actions(self.monitor, self.text, start)

    def acted(self, results: list[StepResult], steps: list[Step]) -> Turn:
        """Actions ran: the episode's rules judge them; the batch counts as one failed
        observation for ``patience`` when every result failed."""
        bad = bool(results) and all(self.env.is_failure(r.observation) for r in results)
        return Turn(steps, rewards=[float(r.reward) for r in results],
                    done=any(r.done for r in results), failures=[bad], cost=0, continues=True)

    def nothing_to_run(self, state: StateDef) -> Turn:
        self.append(state, "No action was given.")
        return Turn(failures=[True], cost=0, continues=True)

    # -- environment-supplied states --------------------------------------------------------
    async def supply(self, state: StateDef) -> AsyncGenerator[Turn, None]:
        async for turn in HANDLERS.get(state.name, observe)(self, state):
            yield turn
        check = self.monitor.check(self.text)
        if check.complete and not check.next_states:  # e.g. ReWOO after its solver
            yield await self.final_answer()
        else:
            yield Turn(cost=0)  # the end of the decision: the budget is checked

    async def run_one(self, state: StateDef, planned: PlannedAction,
                      action: str | None = None, **extra: Any) -> tuple[StepResult, Step]:
        action = action if action is not None else planned.action
        result = await step_async(self.env, action)
        step = self.step("action", action, planned.raw, result.observation,
                         reward=float(result.reward), done=result.done, state=state.name,
                         action=planned.name, input=planned.argument, **extra)
        return result, step

    # -- the end --------------------------------------------------------------------------
    async def final_answer(self) -> Turn:
        segments = self.monitor.split(self.text)
        last = segments[-1]
        name = last.state or ""
        answer = last.content(self.text).strip()
        raw = self.text[last.start:last.end]
        self.recorded = len(segments)
        if self.answer_action is not None:
            planned = PlannedAction(self.answer_action, answer, raw=raw)
            result = await step_async(self.env, planned.action)
            step = self.step("action", planned.action, raw, result.observation,
                             reward=float(result.reward), done=result.done, state=name,
                             answer=answer)
            return Turn([step], failures=[], cost=0,
                        end=Ending(False, None, Termination.DONE if result.done
                                               else Termination.INCORRECT))
        step = self.step("thought", answer, raw, state=name, answer=answer)
        if self.episode.best_reward > 0:
            return Turn([step], failures=[], cost=0, end=Ending(True, None, Termination.REWARD))
        declared = declaration(answer)
        return Turn([step], failures=[], cost=0, declared=declared,
                    end=Ending(False, None, Termination.ANSWERED))

    async def invalid(self, gen: Generation, cost: int) -> Turn:
        """The monitor could not (or may not) correct the output: keep its valid part, record
        the invalid output, count it toward ``patience``."""
        check = gen.check
        kept = check.kept
        steps: list[Step] = []
        if len(kept) > len(self.text):
            final = self.monitor.check(kept, final=True)
            if final.valid and final.complete and not final.next_states:
                # text after the final state: the answer stands, the rest is dropped
                self.text = kept
                steps = self.written(last=False).steps
                answer = await self.final_answer()
                answer.steps[:0] = steps
                answer.cost = cost
                return answer
            self.text = kept
            # cut at a state boundary, the last state kept is finished; a bad content keeps
            # only its state's prompt, for the model to write again
            steps = self.written(last=check.kind not in ("bad_content", "empty_content")).steps
        steps.append(self.step("thought", "", gen.text, error=check.violation or "invalid output",
                               state=None, violation=check.kind))
        return Turn(steps, rewards=[], done=False, failures=[True], cost=cost)


__all__ = ["SpecExecutor"]
