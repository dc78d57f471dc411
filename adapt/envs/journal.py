"""How an environment with side effects resumes after a crash (an optional capability).

A resumed attempt replays the task's recorded LLM calls, so the executor sends the environment
the same actions again. A deterministic world just plays them again; a world with side effects
(files written by a tool server, a remote service) must not take them blindly a second time.
An environment that says so (:class:`Resumable`) is handed the attempt's
:class:`ResumeHistory` before its episode starts: the actions the task's earlier attempts
recorded as steps, with what they gave, in the order they happened, and a way to tell whether
the models are still answering from the recording. It then resumes in one of two ways
(``ARCHITECTURE.md``):

- ``replay``: the world is rebuilt from scratch (a workspace copied from its template again)
  and the recorded actions that change it are applied once more, in order, while the recorded
  results are what the executor sees;
- ``journal``: the recorded results are returned and the world is not touched again.

A fork (``POST /tasks/{id}/fork``) resumes the same way from its origin's steps before the fork
point; the history's ``key`` is then the id of the task its chain of forks starts from, so the
paths the replayed calls name are the same.

An action that the last recorded LLM call asked for but whose step was not recorded was *in
flight* at the crash: it may or may not have taken effect. It is sent again only when the tool
says it is read-only or idempotent; otherwise the attempt stops with
:class:`~adapt.errors.InFlightCallRefused`, naming the call (the task stays resumable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

#: how an environment with side effects resumes (above)
ResumeMode = Literal["replay", "journal"]


@dataclass(frozen=True, slots=True)
class RecordedStep:
    """One action step an earlier attempt recorded: the action and what it gave."""

    action: str
    observation: str
    reward: float = 0.0
    done: bool = False


def _never() -> bool:
    return False


@dataclass(frozen=True)
class ResumeHistory:
    """What an attempt knows of the task's earlier attempts."""

    #: a name for the task that stays the same across its attempts (its id)
    key: str
    #: the recorded action steps, in the order they happened (empty on a first attempt)
    steps: Sequence[RecordedStep] = field(default_factory=tuple)
    #: True while no live LLM call has been made in this attempt (the executor's actions still
    #: come from recorded answers)
    replaying: Callable[[], bool] = _never


@runtime_checkable
class Resumable(Protocol):
    """An environment that resumes from the recorded steps instead of re-running them."""

    def resume_with(self, history: ResumeHistory) -> None:
        """Called once, before the episode starts, by the attempt that runs the task."""
        ...


def resume_mode(env_class: type, config: Mapping[str, Any]) -> ResumeMode | None:
    """How a task of ``env_class`` with ``config`` resumes: ``replay`` or ``journal`` (what
    the class's ``resume_mode_for(config)`` says), or None for an environment that is not
    :class:`Resumable` (a deterministic world: the actions are simply taken again). Asked
    before anything runs, e.g. whether a fork can rebuild the world (``journal``: it cannot
    put back what the recorded actions did)."""
    if not callable(getattr(env_class, "resume_with", None)):
        return None
    decide = getattr(env_class, "resume_mode_for", None)
    if decide is None:
        return "replay"
    mode: ResumeMode = decide(config)
    return mode
