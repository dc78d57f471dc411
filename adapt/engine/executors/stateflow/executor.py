"""The StateFlow executor: one run of a state machine on one (sub-)task.

The process starts in the machine's initial state. Entering a state runs its output functions
in order (a model call with the state's instruction, an environment action, a static prompt);
then the transitions are tried in order (string rules on what this visit produced, explicit
yes/no model checks) and the first that matches gives the next state (none: stay).

Every environment action is a ``Step`` (a model reply without an action is a ``thought`` step)
whose ``extra`` holds ``{"state": ..., "turn": n}``; the last step of a visit also holds
``"transition"`` (the next state), and ``"checks"`` / ``"stopped"`` when there are any.

Outcome (``ExecutionResult``):

- the environment ends the episode: success if its reward > 0 (``reward`` / ``done``);
- a reward > 0 without the end of the episode: success (``reward``), as the ReAct executor;
- a final state: success (``completed``, self-assessed) or failure (``failed``);
- ``patience`` consecutive failed observations (the environment's ``is_failure`` or ``OK.``):
  failure (``patience``);
- the turn limit (state visits: the machine's ``max_turns``, or ``executor.max_steps`` when
  set): failure (``max_turns``), recorded as a transition to ``on_max_turns``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from string import Template
from typing import Any

from adapt.engine.executors.base import THOUGHT_OK, ExecuteOptions, parse_line
from adapt.engine.executors.episode import Ending, Episode, EpisodeExecutor, Turn
from adapt.engine.executors.stateflow.loader import machine_for_env
from adapt.engine.executors.stateflow.models import Machine, State, Transition
from adapt.engine.gated import act
from adapt.engine.runtime import Run
from adapt.engine.tree import Node, Step, StepKind, Termination
from adapt.llm.base import ChatModel, ChatRequest

CHECK_MAX_TOKENS = 8
_YES = re.compile(r"^\W*(yes|y|true)\b", re.IGNORECASE)


@dataclass
class _Visit:
    """What one state visit produced (transition rules look at these)."""

    output: str = ""
    action: str = ""
    observation: str = ""
    reward: float = 0.0
    done: bool = False
    rewards: list[float] = field(default_factory=list)  # one per action taken
    failures: list[bool] = field(default_factory=list)  # one per observation, for patience
    failed: str = ""  # the environment's verdict on the last action: "yes", "no" ("": none)

    def values(self) -> dict[str, str]:
        return {"output": self.output, "action": self.action, "observation": self.observation,
                "failed": self.failed}


class StateFlowExecutor(EpisodeExecutor):
    budget_termination = Termination.MAX_TURNS

    def __init__(self, run: Run, *, max_steps: int | None = None,
                 machine: Machine | None = None) -> None:
        super().__init__(run, max_steps=max_steps)
        #: the machine, with its changes for the run's profile (``profiles`` in the YAML)
        self.machine = (machine or machine_for_env(run.env)).for_profile(run.config.profile)

    def step_budget(self, options: ExecuteOptions) -> int:
        """The turn limit (state visits): ``max_steps`` when set, else the machine's."""
        return (options.max_steps or self.default_max_steps
                or self.run.config.executor.max_steps or self.machine.max_turns)

    # -- templates ---------------------------------------------------------------------------
    def _vars(self, task: str, context: str, history: list[str], state: str,
              last: dict[str, str]) -> dict[str, str]:
        values = {"task": task, "context": context, "trajectory": "".join(history),
                  "state": state, "actions": self.run.env.action_grammar,
                  "examples": self.machine.examples_for(task), **last}
        values["header"] = Template(self.machine.header).safe_substitute(values)
        return values

    def _action_of(self, raw: str) -> str:
        if self.machine.action_regex is not None:
            match = re.search(self.machine.action_regex, raw)
            if match and match.group(1):
                return match.group(1).strip()
        return parse_line(raw)

    # -- the run: one turn per state visit -----------------------------------------------------
    async def turns(self, episode: Episode) -> AsyncGenerator[Turn, None]:
        run, env, machine = self.run, self.run.env, self.machine
        node, task, context = episode.node, episode.task, episode.context
        history: list[str] = []
        last = {"output": "", "action": "", "observation": ""}
        cfg = run.config.executor
        name = machine.initial
        turn = 0
        while True:
            state = machine.states[name]
            if state.final is not None:  # only the initial state can be final here
                ok = state.final == "success"
                yield Turn(end=Ending(ok, ok, Termination.COMPLETED if ok else Termination.FAILED), cost=0)
                return
            turn += 1
            visit = _Visit()
            pending: Step | None = None  # the visit's latest step, recorded when the next begins
            awaiting = False
            for out in state.outputs:
                values = self._vars(task, context or "", history, name, last)
                if out.kind == "prompt":
                    history.append(Template(out.text or "").safe_substitute(values))
                elif out.kind == "model":
                    if pending is not None:
                        yield Turn([pending], rewards=[], done=False, failures=[], cost=0)
                        pending = None
                    prompt = Template(state.instruction or "").safe_substitute(values)
                    request = ChatRequest(
                        prompt=prompt, stop=list(machine.stop),
                        max_tokens=machine.max_tokens or cfg.max_tokens,
                        temperature=episode.temperature, role="executor",
                    )
                    response = await run.call(episode.model, request, node)
                    visit.output = response.text.strip()
                    visit.action = self._action_of(response.text)
                    last["output"], last["action"] = visit.output, visit.action
                    history.append(Template(machine.history.model).safe_substitute(
                        output=visit.output, action=visit.action, observation="", state=name))
                    pending = episode.step(kind="thought", raw=response.text,
                                           text=visit.action, observation="",
                                           extra={"state": name, "turn": turn})
                    awaiting = True  # the model's action is executed by a later 'act'
                else:  # act
                    fixed = out.text is not None
                    action = (Template(out.text or "").safe_substitute(values) if fixed
                              else visit.action)
                    if fixed:
                        awaiting = False
                        visit.action = last["action"] = action
                        history.append(Template(machine.history.action).safe_substitute(
                            output="", action=action, observation="", state=name))
                    result = await act(run, episode.node, action)
                    observation = result.observation
                    visit.observation = last["observation"] = observation
                    visit.reward, visit.done = float(result.reward), result.done
                    history.append(Template(machine.history.observation).safe_substitute(
                        output=visit.output, action=action, observation=observation,
                        state=name))
                    kind: StepKind = ("thought" if action.lower().startswith("think:")
                                      else "action")
                    if pending is None or not awaiting:  # a step of its own
                        if pending is not None:
                            yield Turn([pending], rewards=[], done=False, failures=[], cost=0)
                        pending = episode.step(kind=kind, raw="", text=action,
                                               observation=observation,
                                               extra={"state": name, "turn": turn})
                    awaiting = False
                    pending.kind = kind
                    pending.observation = observation
                    pending.reward, pending.done = visit.reward, visit.done
                    visit.rewards.append(visit.reward)
                    failed = env.is_failure(observation)
                    visit.failed = "yes" if failed else "no"
                    visit.failures.append(observation == THOUGHT_OK or failed)
                    if visit.done:
                        break
            if pending is None:  # a visit without model call or action (prompts only)
                pending = episode.step(kind="thought", raw="", text="", observation="",
                                       extra={"state": name, "turn": turn})
            extra: dict[str, Any] = pending.extra or {}
            pending.extra = extra

            # -- the end of the run (the episode's rules, or a final state), or the next state --
            visited = Turn([pending], rewards=visit.rewards, done=visit.done,
                           failures=visit.failures)
            ending = episode.judge(visited)
            if ending is not None:
                if visit.done:
                    extra["transition"] = await self._next(node, state, visit, task, context,
                                                           history, name, last, ask=False,
                                                           extra=extra,
                                                           temperature=episode.temperature,
                                                           model=episode.model)
                    extra["stopped"] = "done"
                else:
                    extra["stopped"] = ending.termination
            else:
                target = await self._next(node, state, visit, task, context, history, name,
                                          last, ask=True, extra=extra,
                                          temperature=episode.temperature,
                                          model=episode.model)
                final = machine.states[target].final
                if final is not None:
                    extra["transition"] = target
                    ok = final == "success"
                    visited.end = Ending(ok, ok, Termination.COMPLETED if ok else Termination.FAILED)
                elif turn >= episode.max_steps:
                    extra["transition"] = machine.on_max_turns
                    extra["stopped"] = "max_turns"
                    visited.end = Ending(False, None, Termination.MAX_TURNS)
                else:
                    extra["transition"] = target
                    name = target
            yield visited
            if visited.end is not None:
                return

    async def _next(self, node: Node, state: State, visit: _Visit, task: str,
                    context: str | None, history: list[str], name: str, last: dict[str, str],
                    *, ask: bool, extra: dict[str, Any], temperature: float,
                    model: ChatModel) -> str:
        """The first transition that matches (``ask=False``: rules only), else ``name``."""
        values = {**visit.values(), "task": task}
        for transition in state.transitions:
            if not all(rule.matches(values) for rule in transition.when):
                continue
            if transition.ask is None:
                return transition.to
            if not ask:
                continue
            if await self._check(node, transition, task, context, history, name, last, extra,
                                 temperature, model):
                return transition.to
        return name

    async def _check(self, node: Node, transition: Transition, task: str, context: str | None,
                     history: list[str], name: str, last: dict[str, str],
                     extra: dict[str, Any], temperature: float, model: ChatModel) -> bool:
        """An explicit model check: the yes/no ``ask`` question; ``yes`` takes the transition."""
        run = self.run
        values = self._vars(task, context or "", history, name, last)
        question = Template(transition.ask or "").safe_substitute(values)
        prompt = Template(self.machine.check_prompt).safe_substitute(values, question=question)
        request = ChatRequest(prompt=prompt, stop=["\n"], max_tokens=CHECK_MAX_TOKENS,
                              temperature=temperature, role="check")
        response = await run.call(model, request, node)
        answer = _YES.match(response.text.strip()) is not None
        extra.setdefault("checks", []).append(
            {"to": transition.to, "question": question, "answer": "yes" if answer else "no"})
        return answer
