"""The environment-supplied states of a spec agent, by name (see ``executor``).

- ``observe`` (``Obs``, and any state without a rule of its own): the actions written since the
  last supplied state run in order; the observation (a numbered list for several);
- ``evaluate`` (``Eval``): the ``Prop-Ans`` is checked with the environment's answer action;
- ``solve`` (``Solver``, ReWOO): the planned actions run in order with earlier labels replaced by
  their results, then one ``solver`` call answers from the evidence;
- ``summarize`` (``Sum``, PASS): the batch runs concurrently (``actions.run_batch``), one
  ``summarizer`` call condenses it, ``executor.pass_output`` picks what the agent gets.

Each yields the turns it takes (the episode's rules judge them) and appends the state's text
to the trace.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

from adapt.engine.config import config_as
from adapt.engine.executors.episode import Turn
from adapt.engine.executors.spec_agent.actions import PlannedAction, run_batch, substitute
from adapt.engine.executors.spec_agent.config import SpecConfig
from adapt.engine.executors.spec_agent.pass_output import choose, raw_results, summarizer_prompt
from adapt.engine.executors.spec_agent.prompt import answer_instruction
from adapt.engine.spec.model import StateDef
from adapt.llm.base import ChatRequest, ScoringModel

if TYPE_CHECKING:
    from adapt.engine.executors.spec_agent.executor import Trace

Handler = Callable[["Trace", StateDef], AsyncGenerator[Turn, None]]


async def observe(tr: Trace, state: StateDef) -> AsyncGenerator[Turn, None]:
    """``Obs`` (and any state without its own rule): run the pending actions in order."""
    actions = tr.pending_actions()
    if not actions:
        yield tr.nothing_to_run(state)
        return
    ran = [await tr.run_one(state, a) for a in actions]
    observations = [r.observation for r, _ in ran]
    tr.append(state, observations[0] if len(ran) == 1 else raw_results(observations))
    yield tr.acted([r for r, _ in ran], [step for _, step in ran])


async def evaluate(tr: Trace, state: StateDef) -> AsyncGenerator[Turn, None]:
    """``Eval``: check the proposed answer with the environment's answer action."""
    segments = tr.monitor.split(tr.text)
    proposed = next((s.content(tr.text).strip() for s in reversed(segments)
                     if s.state == "Prop-Ans"), "")
    if tr.answer_action is None:
        verdict = ("A reward was seen: the task is done." if tr.episode.best_reward > 0 else
                   "No reward so far: the proposed answer cannot be confirmed here.")
        tr.append(state, verdict)
        return
    planned = PlannedAction(tr.answer_action, proposed)
    result, step = await tr.run_one(state, planned, proposed=proposed)
    tr.append(state, result.observation)
    yield tr.acted([result], [step])


async def solve(tr: Trace, state: StateDef) -> AsyncGenerator[Turn, None]:
    """``Solver`` (ReWOO): run the plan's actions in order, then one solver call."""
    evidence: dict[str, str] = {}
    lines: list[str] = []
    plan = None
    for planned in tr.pending_actions():
        action = f"{planned.name} {substitute(planned.argument, evidence)}".strip()
        result, step = await tr.run_one(state, planned, action, label=planned.label)
        if planned.label:
            evidence[planned.label] = result.observation.strip()
        if planned.plan and planned.plan != plan:
            plan = planned.plan
            lines.append(f"Plan: {plan}")
        lines.append(f"{planned.label or 'Evidence'} = {action}: {result.observation.strip()}")
        yield tr.acted([result], [step])
    yield Turn(cost=0)  # the budget is checked before the solver call
    cfg = tr.run.config.executor
    prompt = ("Solve the task with the plan and the evidence below. "
              f"{answer_instruction(tr.env, checkable=tr.answer_action is not None)}"
              f"\n\nTask: {tr.task.strip()}\n" + "\n".join(lines) + "\n\nAnswer:")
    request = ChatRequest(prompt=prompt, max_tokens=cfg.max_tokens,
                          temperature=tr.episode.temperature, role="solver")
    response = await tr.run.call(tr.episode.model, request, tr.node)
    tr.append(state, response.text.strip())
    yield Turn(cost=1, continues=True)


async def summarize(tr: Trace, state: StateDef) -> AsyncGenerator[Turn, None]:
    """``Sum`` (PASS): run the batch concurrently, summarize, pick what the agent gets."""
    actions = tr.pending_actions()
    if not actions:
        yield tr.nothing_to_run(state)
        return
    results, mode = await run_batch(tr.env, [a.action for a in actions])
    steps = [tr.step("action", planned.action, planned.raw, result.observation,
                     reward=float(result.reward), done=result.done, state=state.name,
                     action=planned.name, input=planned.argument, batch=mode)
             for planned, result in zip(actions, results, strict=True)]
    yield tr.acted(results, steps)
    yield Turn(cost=0)  # the budget is checked before the summarizer call
    observations = [r.observation for r in results]
    goal = actions[-1].plan or ""
    cfg = config_as(tr.run.config.executor, SpecConfig)
    request = ChatRequest(prompt=summarizer_prompt(tr.task, goal, observations),
                          max_tokens=cfg.max_tokens, temperature=tr.episode.temperature,
                          role="summarizer")
    response = await tr.run.call(tr.episode.model, request, tr.node)
    summary = response.text.strip()
    raw = raw_results(observations)
    context = tr.header + tr.text + ("" if tr.text.endswith("\n") else "\n") + state.text + " "
    model = tr.episode.model

    async def scorer(prompt: str, continuation: str) -> list[float] | None:
        if not isinstance(model, ScoringModel):
            return None
        return await tr.run.score(model, tr.node, prompt, continuation)

    choice = await choose(cfg.pass_output, model, context, summary, raw, scorer)
    step = tr.step("thought", choice.output, response.text, state=state.name, summary=summary,
                   raw_results=raw, **choice.extra())
    tr.append(state, choice.output)
    yield Turn([step], rewards=[], done=False, failures=[], cost=1, continues=True)


#: the states with a rule of their own; any other env-supplied state is ``observe``d
HANDLERS: dict[str, Handler] = {"Obs": observe, "Eval": evaluate, "Solver": solve,
                                "Sum": summarize}
