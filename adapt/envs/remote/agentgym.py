"""The client of AgentGym's environment servers (``/create``, ``/reset``, ``/step``, ``/close``).

AgentGym's servers say nothing about themselves: what adapt needs besides the actions (prompts,
the action grammar, which observations are failures, the task observation of a sub-goal, the
salient state) comes from a :class:`Family` written here, one per kind of server. The
``textcraft`` family plays AgentGym's TextCraft with adapt's TextCraft prompts (the two show
their games in the same words). A task's ``environment_config`` is ``{"data_idx": N}``: the
server's own game index.

The protocol has no sequence numbers, so a step is never sent twice blindly: when its answer is
lost after the request may have arrived, or the server no longer knows the episode's id (it
restarted: AgentGym answers such errors with HTTP 200 and an ``error`` key), the client creates
a new episode, resets it to the same game and applies the recorded actions again (each answer
compared with the recorded one), then sends the step to the new episode. Resets are sent one at
a time per server (AgentGym's TextCraft seeds Python's global random generator on each reset).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from adapt.envs.base import BaseEnvironment, StepResult
from adapt.envs.remote.transport import MaybeApplied, Transport, excerpt
from adapt.errors import RemoteEnvironmentError, UserError

log = logging.getLogger(__name__)

_UNKNOWN_ID = re.compile(r"^The id \d+ is not valid\.?$")


class AgentGymConfig(BaseModel):
    """Which of the server's games to play."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data_idx: int = Field(ge=0, description="The server's own game index (its /reset's "
                          "data_idx).", examples=[0, 100])


@dataclass(frozen=True)
class Family:
    """What adapt knows about one kind of AgentGym server."""

    name: str
    description: str
    action_grammar: str
    #: the package whose ``prompts/<kind>.txt`` are the prompts
    prompt_package: str
    failure_prefixes: tuple[str, ...] = ()
    #: an action that shows the salient state and changes nothing (``None``: no state)
    state_action: str | None = None
    state_fields: tuple[str, ...] = ()
    default_max_steps: int = 20
    success_reward: float | None = 1.0
    #: the task observation of a (sub-)goal, from the reset observation
    task_observation: Callable[[str, str], str] = field(default=lambda first, goal: first)
    #: the episode's goal, from the reset observation
    goal: Callable[[str], str] = field(default=lambda first: first.strip().splitlines()[-1])


def _textcraft_goal(first: str) -> str:
    _, _, goal = first.rpartition("\n\nGoal: ")
    return goal.strip().rstrip(".").strip()


def _textcraft_task(first: str, goal: str) -> str:
    head, _, _ = first.rpartition("\n\nGoal: ")
    return f"{head}\n\nGoal: {goal.strip().rstrip('.').rstrip()}."


def _textcraft() -> Family:
    from adapt.envs.textcraft import TextCraft

    return Family(
        name="textcraft",
        description="TextCraft served by AgentGym's TextCraft server: craft a Minecraft item "
        "from the crafting commands shown (reward 1 when it is crafted).",
        action_grammar=TextCraft.action_grammar,
        prompt_package="adapt.envs.textcraft",
        failure_prefixes=("Could not find", "Could not execute", "Wrong item format:"),
        state_action="inventory",
        state_fields=TextCraft.state_fields,
        default_max_steps=TextCraft.default_max_steps,
        task_observation=_textcraft_task,
        goal=_textcraft_goal,
    )


#: the families adapt knows: name -> how to make it
FAMILIES: dict[str, Callable[[], Family]] = {"textcraft": _textcraft}


def family(name: str) -> Family:
    try:
        return FAMILIES[name]()
    except KeyError:
        raise UserError(f"no AgentGym family {name!r}; adapt knows: {', '.join(FAMILIES)} "
                        "(docs/remote-environments.md)") from None


class AgentGymEnvironment(BaseEnvironment):
    """The base of every class made for an AgentGym server (see
    :func:`adapt.envs.remote.catalog.agentgym_class`)."""

    transport: ClassVar[Transport]
    family: ClassVar[Family]
    config_model: ClassVar[type[BaseModel]] = AgentGymConfig
    blocking_steps: ClassVar[bool] = True
    #: one reset at a time per server (a class is made per registration)
    reset_lock: ClassVar[threading.Lock]

    def __init__(self) -> None:
        self._id: int | None = None
        self._data_idx: int | None = None
        self._first = ""
        self._journal: list[tuple[str, dict[str, Any]]] = []
        self._state: str | None = None
        self._state_known = False

    # -- requests ------------------------------------------------------------------------------
    def _answer(self, data: Any, what: str) -> dict[str, Any]:
        """``data`` as an answer object; an ``error`` key becomes :class:`_Gone` (the id is
        unknown) or an error with a short excerpt of the message."""
        if isinstance(data, dict) and "error" in data:
            message = excerpt(data.get("error"))
            if _UNKNOWN_ID.match(message):
                raise _Gone(message)
            log.warning("AgentGym environment %r: %s: %s", self.name, what,
                        excerpt(data.get("error"), 500))
            raise RemoteEnvironmentError(f"remote environment {self.name!r}: the server "
                                         f"failed to {what}: {message}")
        if not isinstance(data, dict) or not isinstance(data.get("observation"), str):
            log.warning("AgentGym environment %r: %s answered %.300r", self.name, what, data)
            raise RemoteEnvironmentError(f"remote environment {self.name!r}: the server's "
                                         f"answer to {what} is not AgentGym's")
        return data

    def _new_episode(self, data_idx: int) -> str:
        created = self.transport.call("POST", "/create", {})
        if not isinstance(created, dict) or not isinstance(created.get("id"), int):
            self._answer(created, "create an environment")
            raise RemoteEnvironmentError(f"remote environment {self.name!r}: /create gave no id")
        self._id = int(created["id"])
        with self.reset_lock:
            first = self._answer(self.transport.call(
                "POST", "/reset", {"id": self._id, "data_idx": data_idx}), "reset")
        return str(first["observation"])

    def _step(self, action: str) -> dict[str, Any]:
        return self._answer(self.transport.call(
            "POST", "/step", {"id": self._id, "action": action}, retry="unsent"), "step")

    def _recover(self) -> None:
        if self._data_idx is None:
            raise UserError(f"{self.name}: call reset(data_idx=...) first")
        log.info("AgentGym environment %r: episode %s lost; a new one replays %d action(s)",
                 self.name, self._id, len(self._journal))
        self._close_id()
        if self._new_episode(self._data_idx) != self._first:
            raise self._diverged("its new episode started")
        for action, was in self._journal:
            again = self._step(action)
            if (again.get("observation"), again.get("reward"), again.get("done")) != (
                    was.get("observation"), was.get("reward"), was.get("done")):
                raise self._diverged(f"{action!r} was applied again")

    def _diverged(self, when: str) -> RemoteEnvironmentError:
        return RemoteEnvironmentError(
            f"remote environment {self.name!r}: the server lost the episode and, when {when}, "
            "answered differently from before, so the task cannot go on from where it was")

    def _send(self, action: str) -> dict[str, Any]:
        for attempt in range(3):
            try:
                if attempt:
                    self._recover()
                return self._step(action)
            except (_Gone, MaybeApplied) as exc:
                if attempt == 2:
                    raise RemoteEnvironmentError(
                        f"remote environment {self.name!r}: the episode was lost 3 times in a "
                        f"row ({excerpt(exc)})") from None
        raise RemoteEnvironmentError("unreachable")  # pragma: no cover

    # -- the episode ---------------------------------------------------------------------------
    def reset(self, **config: Any) -> str:
        cfg = AgentGymConfig.model_validate(config)
        self._close_id()
        self._data_idx = cfg.data_idx
        self._first = self._new_episode(cfg.data_idx)
        self._journal = []
        self._state, self._state_known = None, False
        return self._first

    def step(self, action: str) -> StepResult:
        if self._id is None:
            raise UserError(f"{self.name}: call reset(data_idx=...) before step()")
        answer = self._send(action)
        self._journal.append((action, answer))
        self._state_known = False
        try:
            reward = float(answer.get("reward") or 0.0)
        except (TypeError, ValueError):
            reward = 0.0
        return StepResult(str(answer["observation"]), reward, answer.get("done") is True)

    @property
    def goal(self) -> str:
        return self.family.goal(self._first) if self._first else ""

    def salient_state(self) -> str | None:
        action = self.family.state_action
        if action is None or self._id is None:
            return None
        if not self._state_known:  # the state action changes nothing: it is not recorded
            self._state = str(self._send(action)["observation"])
            self._state_known = True
        return self._state

    def task_observation(self, goal: str) -> str:
        return self.family.task_observation(self._first, goal)

    def is_failure(self, observation: str) -> bool:
        return observation.startswith(self.family.failure_prefixes)

    # -- the end ---------------------------------------------------------------------------
    def _close_id(self) -> None:
        env_id, self._id = self._id, None
        if env_id is None:
            return
        transport, name = self.transport, self.name

        def close() -> None:
            try:
                transport.call("POST", "/close", {"id": env_id}, retry="never")
            except Exception as exc:  # best effort
                log.debug("AgentGym environment %r: closing %s: %s", name, env_id, exc)

        threading.Thread(target=close, name="adapt-agentgym-close", daemon=True).start()

    def close(self) -> None:
        self._close_id()


class _Gone(Exception):
    """The server does not know the episode's id (it restarted, or closed the episode)."""


__all__ = ["FAMILIES", "AgentGymConfig", "AgentGymEnvironment", "Family", "family"]
