"""The sessions of ``adapt env serve``: one environment instance each, changes numbered.

A session applies each sequence number once: a change whose number it applied already is
answered with the stored answer (the last ``KEEP_ANSWERS`` are kept), one past the next number
is refused. After every change the session keeps the environment's verification mark under the
change's number, so ``verify(goal, since=N)`` measures from the state after change ``N``
(``since`` 0: the state the session started in), and a checkpoint's mark under its own number.
A session idle for ``idle_seconds`` is closed and forgotten; a client then starts a new one.
Every method is thread-safe (the server's routes run in a thread pool); one session's calls
run one at a time.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapt.envs.base import Environment, start_episode, validate_config

log = logging.getLogger(__name__)

#: answers a session keeps for repeated requests
KEEP_ANSWERS = 64
#: checkpoints a session keeps (the oldest are forgotten first)
KEEP_CHECKPOINTS = 256


class SessionError(Exception):
    """A request the sessions refuse: ``slug`` names the problem, ``status`` its HTTP
    status."""

    def __init__(self, status: int, slug: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail


@dataclass
class Session:
    id: str
    env: Environment
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0
    answers: OrderedDict[int, dict[str, Any]] = field(default_factory=OrderedDict)
    #: verification marks by sequence number (0: the start)
    marks: dict[int, object] = field(default_factory=dict)
    checkpoints: OrderedDict[int, object] = field(default_factory=OrderedDict)
    closed: bool = False


@dataclass
class Counters:
    created: int = 0
    expired: int = 0
    applied: int = 0
    repeated: int = 0


class SessionStore:
    """The server's sessions of environments that ``factory`` makes."""

    def __init__(self, factory: Callable[[], Environment], *, idle_seconds: float,
                 max_sessions: int, max_changes: int,
                 mark: Callable[[Environment], object | None] = lambda env: None) -> None:
        self.factory = factory
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self.max_changes = max_changes
        self._mark = mark
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.counters = Counters()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    # -- lifecycle -----------------------------------------------------------------------------
    def create(self, config: Mapping[str, Any]) -> tuple[Session, str]:
        """A new session started with ``config``; its initial observation."""
        self.expire()
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise SessionError(503, "too-many-sessions", (
                    f"this server holds {self.max_sessions} sessions, the most it may; close "
                    "sessions or wait for idle ones to expire"))
            session = Session(uuid.uuid4().hex, self.factory(), time.monotonic())
            self._sessions[session.id] = session  # counted while it starts
        try:
            with session.lock:
                observation = start_episode(session.env, validate_config(session.env, config))
                session.marks[0] = self._mark(session.env)
        except BaseException:
            self._drop(session.id)
            raise
        self.counters.created += 1
        log.info("session %s started", session.id)
        return session, observation

    def get(self, session_id: str) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_used = time.monotonic()
        if session is None or session.closed:
            raise SessionError(404, "session-not-found", (
                "no such session (it expired, was closed, or the server restarted); start a "
                "new one and apply its changes again"))
        return session

    def _drop(self, session_id: str) -> Session | None:
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is not None:
            with session.lock:
                session.closed = True
                try:
                    session.env.close()
                except Exception as exc:
                    log.warning("session %s: close() raised %s: %s", session_id,
                                type(exc).__name__, exc)
        return session

    def delete(self, session_id: str) -> bool:
        found = self._drop(session_id) is not None
        if found:
            log.info("session %s closed", session_id)
        return found

    def expire(self) -> int:
        """Close the sessions idle for longer than ``idle_seconds``; returns how many."""
        now = time.monotonic()
        with self._lock:
            idle = [s.id for s in self._sessions.values()
                    if now - s.last_used > self.idle_seconds and not s.lock.locked()]
        for session_id in idle:
            if self._drop(session_id) is not None:
                self.counters.expired += 1
                log.info("session %s expired (idle for over %g s)", session_id,
                         self.idle_seconds)
        return len(idle)

    def close_all(self) -> None:
        with self._lock:
            ids = list(self._sessions)
        for session_id in ids:
            self._drop(session_id)

    # -- calls ---------------------------------------------------------------------------------
    def ask(self, session_id: str, fn: Callable[[Session], dict[str, Any]]) -> dict[str, Any]:
        """``fn(session)`` for a question that changes nothing."""
        session = self.get(session_id)
        with session.lock:
            if session.closed:
                raise SessionError(404, "session-not-found", "the session was closed")
            return fn(session)

    def change(self, session_id: str, seq: int, what: str,
               fn: Callable[[Session], dict[str, Any]]) -> dict[str, Any]:
        """Apply change number ``seq`` (``fn``) once; a repeated number gets its stored
        answer (``repeated: true``)."""
        session = self.get(session_id)
        with session.lock:
            if session.closed:
                raise SessionError(404, "session-not-found", "the session was closed")
            if seq <= session.seq:
                stored = session.answers.get(seq)
                if stored is None:
                    raise SessionError(409, "sequence-conflict", (
                        f"change {seq} was applied and its answer is no longer kept (the "
                        f"session is at {session.seq})"))
                self.counters.repeated += 1
                log.info("session %s: change %d repeated: its stored answer is sent again",
                         session_id, seq)
                return {**stored, "repeated": True}
            if seq != session.seq + 1:
                raise SessionError(409, "sequence-conflict", (
                    f"the session's next change is number {session.seq + 1}, not {seq}"))
            if seq > self.max_changes:
                raise SessionError(409, "too-many-changes", (
                    f"a session takes {self.max_changes} changes at most; start a new one"))
            answer = {**fn(session), "seq": seq, "repeated": False}
            session.seq = seq
            session.answers[seq] = answer
            while len(session.answers) > KEEP_ANSWERS:
                session.answers.popitem(last=False)
            session.marks[seq] = self._mark(session.env)
            self.counters.applied += 1
            log.info("session %s: change %d applied (%s)", session_id, seq, what)
            return answer

    def keep_checkpoint(self, session: Session, seq: int, mark: object) -> None:
        session.checkpoints[seq] = mark
        while len(session.checkpoints) > KEEP_CHECKPOINTS:
            session.checkpoints.popitem(last=False)


__all__ = ["KEEP_ANSWERS", "Counters", "Session", "SessionError", "SessionStore"]
