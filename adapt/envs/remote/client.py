"""The client of adapt's environment protocol: a remote environment as an ``Environment``.

One instance holds one session of the server at a time (``reset`` starts a new one). What the
engine asks without acting (the goal, the salient state, the prompts, whether an observation is
a failure) comes with the session's answers and is answered here without a request; a
task observation for a sub-goal, a verdict and a tool call's action are asked of the server.

Every change (a step, a checkpoint, a rollback) is sent with the session's next sequence number
and kept in a journal. An answer that is lost is asked for again with the same number (the
server never applies a number twice). A session the server no longer knows (it restarted, or
the session idled past its timeout) is started again with the same config and the journal is
applied to it in order, each answer compared with the one recorded; then the request goes on.
So neither a restarted server nor a restarted worker (whose new attempt starts a new session
and replays its recorded actions through the engine) applies an action twice to one world.

Environments made here declare ``blocking_steps``: the engine calls them in its worker threads.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from adapt.envs.base import BaseEnvironment, StepResult
from adapt.envs.remote import protocol as wire
from adapt.envs.remote.transport import Refused, Transport
from adapt.envs.tools import ToolCallError, ToolSpec
from adapt.envs.verdicts import Verification
from adapt.errors import InvalidConfig, RemoteEnvironmentError, UserError

log = logging.getLogger(__name__)

_A = TypeVar("_A", bound=BaseModel)
#: observations whose failure flag is remembered (``is_failure`` is asked about recent ones)
FAILURE_MEMORY = 4096
#: times a lost session is started again for one request before giving up
MAX_RECOVERIES = 3


@dataclass(frozen=True)
class _Op:
    """One change the session applied: its path, request and answer."""

    path: str
    request: dict[str, Any]
    answer: dict[str, Any]


class RemoteEnvironment(BaseEnvironment):
    """The base of every class made for a server of adapt's protocol (see
    :func:`adapt.envs.remote.catalog.remote_class`); the class attributes come from the
    server's ``GET /v1/environment``."""

    transport: ClassVar[Transport]
    meta: ClassVar[wire.EnvironmentMeta]
    blocking_steps: ClassVar[bool] = True

    def __init__(self) -> None:
        self._session: str | None = None
        self._created: wire.SessionCreated | None = None
        self._config: dict[str, Any] = {}
        self._journal: list[_Op] = []
        self._seq = 0
        self._state: str | None = None
        self._failed: OrderedDict[str, bool] = OrderedDict()

    # -- requests ------------------------------------------------------------------------------
    def _parse(self, model: type[_A], data: Any, what: str) -> _A:
        try:
            return model.model_validate(data)
        except ValidationError:
            log.warning("remote environment %r: the answer to %s does not follow the protocol: "
                        "%.300r", self.name, what, data)
            raise RemoteEnvironmentError(
                f"remote environment {self.name!r}: the server's answer to {what} does not "
                "follow adapt's environment protocol") from None

    def _create(self, config: Mapping[str, Any]) -> wire.SessionCreated:
        try:
            data = self.transport.call("POST", f"{wire.PREFIX}/sessions",
                                       {"config": dict(config)})
        except Refused as exc:
            if exc.slug == wire.INVALID_CONFIG or exc.status == 422:
                raise InvalidConfig(f"{self.name}: invalid environment_config: "
                                    f"{exc.detail or 'refused by the server'}") from None
            raise
        return self._parse(wire.SessionCreated, data, "a new session")

    def _session_path(self, path: str) -> str:
        if self._session is None:
            raise UserError(f"{self.name}: call reset(...) before using the environment")
        return f"{wire.PREFIX}/sessions/{self._session}/{path}"

    def _request(self, path: str, payload: dict[str, Any], model: type[_A]) -> _A:
        """``POST`` to the session; a session the server lost is started again (the journal
        applied again) and the request sent once more."""
        lost = False
        for recovery in range(MAX_RECOVERIES + 1):
            try:
                if lost:
                    self._recover()
                return self._parse(model, self.transport.call(
                    "POST", self._session_path(path), payload), path)
            except Refused as exc:
                lost = exc.slug == wire.SESSION_NOT_FOUND or (
                    exc.slug == wire.SEQUENCE_CONFLICT and "seq" in payload)
                if not lost or recovery == MAX_RECOVERIES:
                    raise
                log.info("remote environment %r: session %s lost (%s); starting it again with "
                         "%d operation(s) to apply", self.name, self._session, exc.slug,
                         len(self._journal))
        raise RemoteEnvironmentError(f"remote environment {self.name!r}: the session was lost "
                                     f"{MAX_RECOVERIES} times in a row")  # pragma: no cover

    def _recover(self) -> None:
        """A new session with the episode's config and every recorded change applied again,
        each answer checked against the recorded one."""
        original = self._created
        created = self._create(self._config)
        if original is not None and created.observation != original.observation:
            raise self._diverged("its new session started")
        self._session, self._created = created.session, created
        for op in self._journal:
            answer = self.transport.call("POST", self._session_path(op.path), op.request)
            if op.path == "steps":
                again = self._parse(wire.StepAnswer, answer, op.path)
                was = wire.StepAnswer.model_validate(op.answer)
                if (again.observation, again.reward, again.done) != (
                        was.observation, was.reward, was.done):
                    raise self._diverged(f"step {op.request['seq']} was applied again")

    def _diverged(self, when: str) -> RemoteEnvironmentError:
        return RemoteEnvironmentError(
            f"remote environment {self.name!r}: the server lost the session and, when "
            f"{when}, answered differently from before (the environment is not "
            "deterministic), so the task cannot go on from where it was")

    def _change(self, path: str, payload: dict[str, Any], model: type[_A]) -> _A:
        seq = self._seq + 1
        request = {**payload, "seq": seq}
        answer = self._request(path, request, model)
        self._seq = seq
        self._journal.append(_Op(path, request, answer.model_dump(mode="json")))
        state = getattr(answer, "state", None)
        self._state = state if isinstance(state, str) else None
        return answer

    def _remember(self, observation: str, failed: bool) -> None:
        self._failed[observation] = failed
        self._failed.move_to_end(observation)
        while len(self._failed) > FAILURE_MEMORY:
            self._failed.popitem(last=False)

    # -- the episode ---------------------------------------------------------------------------
    def reset(self, **config: Any) -> str:
        """End the current session (if any) and start one with ``config``."""
        self._end_session()
        created = self._create(config)
        self._session, self._created = created.session, created
        self._config = dict(config)
        self._journal = []
        self._seq = 0
        self._state = created.state
        self._remember(created.observation, False)
        return created.observation

    def step(self, action: str) -> StepResult:
        answer = self._change("steps", {"action": action}, wire.StepAnswer)
        self._remember(answer.observation, answer.failed)
        return StepResult(answer.observation, answer.reward, answer.done, dict(answer.info))

    @property
    def goal(self) -> str:
        return "" if self._created is None else self._created.goal

    def salient_state(self) -> str | None:
        return self._state

    def task_observation(self, goal: str) -> str:
        return self._request("task-observation", {"goal": goal},
                             wire.TaskObservation).observation

    def is_failure(self, observation: str) -> bool:
        return self._failed.get(observation, False)

    def prompt_template(self, kind: str) -> str:
        if self._created is None:
            raise KeyError(kind)
        return self._created.prompts[kind]

    def prompt_variables(self) -> Mapping[str, str]:
        return {} if self._created is None else dict(self._created.prompt_variables)

    # -- rolling back failed sub-tasks (servers that can) ---------------------------------------
    def rolls_back(self) -> bool:
        return bool(self.meta.rolls_back and self._created and self._created.rolls_back)

    def checkpoint(self) -> object:
        return self._change("checkpoints", {}, wire.OperationAnswer).seq

    def rollback(self, mark: object) -> None:
        if not isinstance(mark, int):
            raise TypeError(f"{self.name}: rollback takes a checkpoint()'s mark, got {mark!r}")
        self._change("rollbacks", {"to": mark}, wire.OperationAnswer)

    # -- the end ---------------------------------------------------------------------------
    def _end_session(self) -> None:
        """Tell the server the session is over, in a thread of its own (a server that does not
        answer holds nobody; an unknown session is forgotten by its idle timeout anyway)."""
        session, self._session, self._created = self._session, None, None
        if session is None:
            return
        transport, name = self.transport, self.name

        def delete() -> None:
            try:
                transport.call("DELETE", f"{wire.PREFIX}/sessions/{session}", retry="never")
            except Exception as exc:  # best effort
                log.debug("remote environment %r: closing session %s: %s", name, session, exc)

        threading.Thread(target=delete, name="adapt-remote-close", daemon=True).start()

    def close(self) -> None:
        self._end_session()


class VerifiesRemotely:
    """The ``Verifiable`` members of a remote environment whose server verifies goals: the
    mark is the session's sequence number when the node started (no request)."""

    _seq: int

    if TYPE_CHECKING:  # RemoteEnvironment's
        def _request(self, path: str, payload: dict[str, Any], model: type[_A]) -> _A: ...

    def verification_mark(self) -> object:
        return self._seq

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        answer = self._request("verify", {"goal": goal,
                                          "since": since if isinstance(since, int) else None},
                               wire.VerifyAnswer)
        return Verification(answer.verdict, answer.evidence)


class DeclaresToolsRemotely:
    """The ``DeclaresTools`` members of a remote environment whose server declares tools."""

    _created: wire.SessionCreated | None

    if TYPE_CHECKING:  # RemoteEnvironment's
        def _request(self, path: str, payload: dict[str, Any], model: type[_A]) -> _A: ...

    def tools(self) -> Sequence[ToolSpec]:
        if self._created is None:
            return []
        return [ToolSpec(t.name, t.description, t.parameters, read_only=t.read_only,
                         destructive=t.destructive, idempotent=t.idempotent)
                for t in self._created.tools]

    def tool_action(self, name: str, arguments: Mapping[str, Any]) -> str:
        try:
            return self._request("tool-action", {"name": name, "arguments": dict(arguments)},
                                 wire.ToolActionAnswer).action
        except Refused as exc:
            if exc.slug == wire.TOOL_CALL_ERROR:
                raise ToolCallError(exc.detail or f"the call of {name} was refused") from None
            raise


__all__ = ["DeclaresToolsRemotely", "RemoteEnvironment", "VerifiesRemotely"]
