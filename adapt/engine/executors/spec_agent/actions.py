"""The actions a spec agent wrote, and running them in the environment.

An action is an ``Act`` state (the action's name) with the ``Act-Inp`` state after it (its
argument); the environment gets ``f"{name} {argument}".strip()``. ReWOO's ``Act-Lbl`` (e.g.
``#E1``) labels the next action, and ``Plan`` the plan text it serves.

``run_batch`` runs several actions at once when the environment allows it:

- an environment with an async ``astep(action)``: ``asyncio.gather`` over ``astep`` calls;
- else one that declares ``concurrent_actions = True``: each ``step`` in a worker thread
  (``asyncio.to_thread``);
- else one after the other, in order. Most environments are stateful (TextCraft: ``craft``
  needs what an earlier ``get`` fetched; the instance is not thread-safe), so running their
  actions at the same time would race; they opt in only when their actions are independent.
  (One after the other still goes through ``step_async``: an environment whose steps block
  runs each in a worker thread.)
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from adapt.engine.spec.monitor import Monitor
from adapt.envs.base import (
    AsyncStepping,
    ConcurrentActions,
    Environment,
    StepResult,
    step_async,
)

ACTION_STATES = ("Act", "Act-Inp", "Act-Lbl")
BatchMode = Literal["async", "threads", "sequential"]


@dataclass(slots=True)
class PlannedAction:
    name: str
    argument: str = ""
    label: str | None = None
    plan: str | None = None
    raw: str = ""

    @property
    def action(self) -> str:
        return f"{self.name} {self.argument}".strip()


def planned_actions(monitor: Monitor, text: str, start: int = 0) -> list[PlannedAction]:
    """The actions written in ``text`` from offset ``start`` on, in order."""
    actions: list[PlannedAction] = []
    label: str | None = None
    plan: str | None = None
    for seg in monitor.split(text):
        if seg.start < start or seg.state is None:
            continue
        content = seg.content(text).strip()
        raw = text[seg.start:seg.end]
        if seg.state == "Plan":
            plan = content
        elif seg.state == "Act-Lbl":
            label = content
        elif seg.state == "Act":
            actions.append(PlannedAction(content, label=label, plan=plan, raw=raw))
            label = None
        elif seg.state == "Act-Inp" and actions:
            actions[-1].argument = content
            actions[-1].raw += raw
    return actions


def batch_mode(env: Environment) -> BatchMode:
    if isinstance(env, AsyncStepping) and inspect.iscoroutinefunction(env.astep):
        return "async"
    if isinstance(env, ConcurrentActions) and env.concurrent_actions is True:
        return "threads"
    return "sequential"


async def run_batch(env: Environment, actions: Sequence[str]) -> tuple[list[StepResult],
                                                                       BatchMode]:
    """Run ``actions`` (concurrently when the environment allows it); results in order."""
    mode = batch_mode(env)
    if mode == "async" and isinstance(env, AsyncStepping):
        if len(actions) > 1:
            return list(await asyncio.gather(*(env.astep(a) for a in actions))), mode
        return [await env.astep(a) for a in actions], mode
    if mode == "threads" and len(actions) > 1:
        results = await asyncio.gather(*(asyncio.to_thread(env.step, a) for a in actions))
        return list(results), mode
    return [await step_async(env, a) for a in actions], mode


def substitute(text: str, evidence: dict[str, str]) -> str:
    """ReWOO: earlier labels (``#E1``) in ``text`` replaced by their results, longest first."""
    for label in sorted(evidence, key=len, reverse=True):
        if label:
            text = text.replace(label, evidence[label])
    return text
