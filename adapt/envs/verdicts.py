"""Verification: an environment checks a (sub-)goal against its own state.

An optional capability of an environment (see ``Verifiable``). The controller takes a *mark*
when a task node starts (``verification_mark()``: whatever the environment needs to measure
what happened since, e.g. TextCraft's production counters) and asks ``verify(goal, since=mark)``
before the node runs (already satisfied: skip it), after every executor step (confirmed: stop
early) and when the executor ends (a refuted claim fails the node).

A verdict is ``confirmed`` (the state shows the goal is achieved), ``refuted`` (the state shows
it is not) or ``unknown`` (the goal is not of a form the environment can check; the executor's
claim stands). ``evidence`` says why, in words fed back to the next attempt
(``holds 2 of 6 oak planks``).

Environments without the capability are checked by the episode's reward only: the root goal is
confirmed by reward 1, refuted by a ``done`` step with a lower reward;
everything else is unknown (``reward_verification``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

Verdict = Literal["confirmed", "refuted", "unknown"]


@dataclass(frozen=True, slots=True)
class Verification:
    """An environment's verdict on a goal, with the evidence for it."""

    verdict: Verdict
    evidence: str = ""

    @property
    def checkable(self) -> bool:
        """Whether the environment could decide the goal (confirmed or refuted)."""
        return self.verdict != "unknown"


UNKNOWN = Verification("unknown", "")


@runtime_checkable
class Verifiable(Protocol):
    """An environment that can check goals against its state."""

    def verification_mark(self) -> object:
        """An opaque snapshot taken when a task node starts (passed back as ``since``)."""
        ...

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        """The verdict on ``goal`` now; ``since``: the mark taken when its node started."""
        ...


def same_goal(a: str, b: str) -> bool:
    """Whether two goal texts are the same goal (case, spaces and a final ``.`` ignored)."""

    def norm(text: str) -> str:
        return " ".join(text.lower().split()).rstrip(".").strip()

    return norm(a) == norm(b)


def reward_verification(reward: float | None, done: bool) -> Verification:
    """The verdict on the root goal from the episode's reward (SQL, Bash, any environment)."""
    if reward is not None and reward >= 1.0:
        return Verification("confirmed", f"the environment gave reward {reward:g}")
    if not done or reward is None:
        return UNKNOWN
    return Verification("refuted", f"the episode ended with reward {reward:g}, not 1")
