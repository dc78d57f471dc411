"""The environment-supplied states of a spec agent, by name (see ``executor``).

- ``observe`` (``Obs``, and any state without a rule of its own): the actions written since the
  last supplied state run in order; the observation (a numbered list for several);
- ``evaluate`` (``Eval``): the ``Prop-Ans`` is checked with the environment's answer action;
- ``solve`` (``Solver``, ReWOO): the planned actions run in order with earlier labels replaced by
  their results, then one ``solver`` call answers from the evidence;
- ``summarize`` (``Sum``, PASS): the batch runs concurrently (``actions.run_batch``), one
  ``summarizer`` call condenses it, ``executor.pass_output`` picks what the agent gets.

Each returns an ``ExecutionResult`` when the run ends there, else ``None`` (the state's text has
been appended to the trace).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from adapt.engine.executors.base import ExecutionResult
from adapt.engine.executors.spec_agent.actions import PlannedAction, run_batch, substitute
from adapt.engine.executors.spec_agent.pass_output import choose, raw_results, summarizer_prompt
from adapt.engine.executors.spec_agent.prompt import answer_instruction
from adapt.engine.spec.model import StateDef
from adapt.llm.base import ChatRequest

if TYPE_CHECKING:
    from adapt.engine.executors.spec_agent.executor import Episode

Handler = Callable[["Episode", StateDef], Awaitable[ExecutionResult | None]]


async def observe(ep: Episode, state: StateDef) -> ExecutionResult | None:
    """``Obs`` (and any state without its own rule): run the pending actions in order."""
    actions = ep.pending_actions()
    if not actions:
        ep.append(state, "No action was given.")
        return ep.count_bad(True)
    results = [await ep.run_one(state, a) for a in actions]
    observations = [r.observation for r in results]
    ep.append(state, observations[0] if len(results) == 1 else raw_results(observations))
    return await ep.outcome_of(results)


async def evaluate(ep: Episode, state: StateDef) -> ExecutionResult | None:
    """``Eval``: check the proposed answer with the environment's answer action."""
    segments = ep.monitor.split(ep.trace)
    proposed = next((s.content(ep.trace).strip() for s in reversed(segments)
                     if s.state == "Prop-Ans"), "")
    if ep.answer_action is None:
        verdict = ("A reward was seen: the task is done." if ep.best_reward > 0 else
                   "No reward so far: the proposed answer cannot be confirmed here.")
        ep.append(state, verdict)
        return None
    planned = PlannedAction(ep.answer_action, proposed)
    result = await ep.run_one(state, planned, proposed=proposed)
    ep.append(state, result.observation)
    return await ep.outcome_of([result])


async def solve(ep: Episode, state: StateDef) -> ExecutionResult | None:
    """``Solver`` (ReWOO): run the plan's actions in order, then one solver call."""
    evidence: dict[str, str] = {}
    lines: list[str] = []
    plan = None
    for planned in ep.pending_actions():
        action = f"{planned.name} {substitute(planned.argument, evidence)}".strip()
        result = await ep.run_one(state, planned, action, label=planned.label)
        if planned.label:
            evidence[planned.label] = result.observation.strip()
        if planned.plan and planned.plan != plan:
            plan = planned.plan
            lines.append(f"Plan: {plan}")
        lines.append(f"{planned.label or 'Evidence'} = {action}: {result.observation.strip()}")
        outcome = await ep.outcome_of([result])
        if outcome is not None:
            return outcome
    if ep.calls >= ep.max_steps:
        return ep.result(False, None, "max_steps")
    cfg = ep.run.config.executor
    prompt = ("Solve the task with the plan and the evidence below. "
              f"{answer_instruction(ep.env, checkable=ep.answer_action is not None)}"
              f"\n\nTask: {ep.task.strip()}\n" + "\n".join(lines) + "\n\nAnswer:")
    request = ChatRequest(prompt=prompt, max_tokens=cfg.max_tokens,
                          temperature=cfg.temperature, role="solver")
    response = await ep.run.call(ep.run.executor_model, request, ep.node)
    ep.calls += 1
    ep.append(state, response.text.strip())
    return None


async def summarize(ep: Episode, state: StateDef) -> ExecutionResult | None:
    """``Sum`` (PASS): run the batch concurrently, summarize, pick what the agent gets."""
    actions = ep.pending_actions()
    if not actions:
        ep.append(state, "No action was given.")
        return ep.count_bad(True)
    results, mode = await run_batch(ep.env, [a.action for a in actions])
    for planned, result in zip(actions, results, strict=True):
        await ep.add_step("action", planned.action, planned.raw, result.observation,
                          reward=float(result.reward), done=result.done, state=state.name,
                          action=planned.name, input=planned.argument, batch=mode)
    outcome = await ep.outcome_of(results)
    if outcome is not None:
        return outcome
    if ep.calls >= ep.max_steps:
        return ep.result(False, None, "max_steps")
    observations = [r.observation for r in results]
    goal = actions[-1].plan or ""
    cfg = ep.run.config.executor
    request = ChatRequest(prompt=summarizer_prompt(ep.task, goal, observations),
                          max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                          role="summarizer")
    response = await ep.run.call(ep.run.executor_model, request, ep.node)
    ep.calls += 1
    summary = response.text.strip()
    raw = raw_results(observations)
    context = ep.header + ep.trace + ("" if ep.trace.endswith("\n") else "\n") \
        + state.text + " "
    model = ep.run.executor_model

    async def scorer(prompt: str, continuation: str) -> list[float] | None:
        return await ep.run.score(model, ep.node, prompt, continuation)

    choice = await choose(cfg.pass_output, model, context, summary, raw, scorer)
    await ep.add_step("thought", choice.output, response.text, state=state.name,
                      summary=summary, raw_results=raw, **choice.extra())
    ep.append(state, choice.output)
    return None


#: the states with a rule of their own; any other env-supplied state is ``observe``d
HANDLERS: dict[str, Handler] = {"Obs": observe, "Eval": evaluate, "Solver": solve,
                                "Sum": summarize}
