"""Verification in the controller: the environment checks what the executor claims.

With ``RunConfig.verification == "env"`` (the default; profile ``paper`` turns it off) every
task node is checked against the environment (:mod:`adapt.envs.verdicts`):

- before its executor runs: a goal already satisfied is not run (no LLM call); the node
  succeeds with termination ``verified``;
- after every executor turn (the shared episode, ``adapt.engine.executors.episode``): a confirmed
  goal ends the executor run early (``verified``);
- when the executor ends: a claimed success the environment refutes fails the node
  (termination ``refuted``, so ADaPT decomposes it) and the evidence is handed to the next
  attempt (the planner's task, a cascade's next model); a claimed failure the environment
  confirms succeeds (``verified``); ``unknown`` keeps the executor's claim.

The node records ``claim`` (the executor's own outcome; ``None`` when it made none), ``verdict``
(``confirmed`` / ``refuted`` / ``unknown``; ``None`` when not checked) and ``evidence``.
Environments without ``verify`` are checked by the reward only (the root goal; see
``reward_verification``). Whatever the setting, a task never reports ``succeeded`` when the
environment refutes its root goal (:func:`final_verdict`, used by ``run_task``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from adapt.envs.base import Environment, conforms, env_call
from adapt.envs.verdicts import (
    UNKNOWN,
    Verifiable,
    Verification,
    reward_verification,
    same_goal,
)

#: how refutation evidence is handed to the next attempt (planner task, cascade retry)
FEEDBACK = "The environment checked an earlier attempt at this goal: {evidence}."


@dataclass(frozen=True, slots=True)
class Watch:
    """The node being verified while its executor runs, and the mark taken at its start."""

    node_id: int
    goal: str
    mark: object | None


async def check(env: Environment, goal: str, mark: object | None, *, reward: float,
                episode_done: bool) -> Verification:
    """The environment's verdict on ``goal``: its own ``verify`` where it has one, else (and
    for a root goal it cannot decide) the episode's reward."""
    verdict = UNKNOWN
    if conforms(env, Verifiable):
        verdict = await env_call(env, cast(Verifiable, env).verify, goal, since=mark)
    if verdict.checkable:
        return verdict
    root = str(env.goal or "")
    if root and same_goal(goal, root):
        return reward_verification(reward, episode_done)
    return verdict


def mark(env: object) -> object | None:
    return cast(Verifiable, env).verification_mark() if conforms(env, Verifiable) \
        else None


def feedback(evidence: str) -> str:
    """The line that hands refutation evidence to the next attempt."""
    return FEEDBACK.format(evidence=evidence)


async def final_verdict(env: Environment, goal: str, *, reward: float,
                        episode_done: bool) -> Verification:
    """The verdict on a task's root goal when the task ends (the status rule)."""
    return await check(env, goal, None, reward=reward, episode_done=episode_done)
