"""Record every LLM call of a run, and replay a recording without paying for it again.

``RecordingModel`` wraps any ChatModel and appends each (request, response) pair to a
``Recording`` (pydantic, JSON round-trippable), calling an optional callback per call. Scoring
calls (``ScoringModel.score``) are calls too: recorded as a ``scorer`` request with the
continuation, answered by a response holding the log-probabilities.

``ReplayModel`` answers from a recording in order, checking each incoming request against the
recorded one (messages/prompt, stop, max_tokens, temperature, seed, and the tools offered and
the JSON schema asked for; not ``role``); a recorded answer comes back whole, its tool calls
included. A
mismatch raises :class:`~adapt.errors.ReplayDivergence` with the call index and a short diff.
When the recording runs out it either continues with a ``live`` model (how a crashed task
resumes: finished calls are replayed for free, then the run goes on live) or raises.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

import orjson
from pydantic import BaseModel, Field

from adapt.errors import ReplayDivergence
from adapt.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    FollowsReplay,
    Message,
    WrapperModel,
    can_score,
    scoring_request,
)

logger = logging.getLogger(__name__)

_COMPARED = ("messages", "prompt", "stop", "max_tokens", "temperature", "seed", "continuation",
             "tools", "tool_choice", "json_schema")
#: compared fields a request without them leaves out of its fingerprint, so requests made
#: before the field existed keep the fingerprint they were stored with
_OPTIONAL = ("continuation", "tools", "tool_choice", "json_schema")
_SNIPPET = 60


def request_fingerprint(request: ChatRequest) -> str:
    """SHA-256 over the compared fields of a request (what replay checks; not ``role``).

    Lets a store keep replay verification without keeping prompt text. Fields a request does
    not use (tools, a JSON schema, a message's tool fields) are left out, so a request made
    before they existed keeps the fingerprint it was stored with.
    """
    fast = _fast_blob(request)
    if fast is not None:
        return hashlib.sha256(fast).hexdigest()
    data = request.model_dump(mode="json", include=set(_COMPARED))
    for key in _OPTIONAL:  # requests without them keep the fingerprint they always had
        if data.get(key) is None:
            data.pop(key, None)
    if request.messages is not None:  # likewise a message without tool fields
        data["messages"] = [m.wire() for m in request.messages]
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _fast_blob(request: ChatRequest) -> bytes | None:
    """The bytes :func:`request_fingerprint` hashes, written by orjson, for the requests
    whose every value orjson writes exactly as ``json.dumps`` does (strings, integers, a
    temperature written in positional notation: 0, or 1e-4 <= |t| < 1e16): about a tenth of
    the cost of ``model_dump`` and ``json.dumps`` on every LLM call. None for the others
    (tools or a JSON schema offered, an integer beyond 64 bits, a lone surrogate), which
    take the general path. ``tests/llm/test_fingerprint.py`` holds the two paths equal."""
    if request.tools is not None or request.json_schema is not None:
        return None
    t = request.temperature
    if not (t == 0.0 or 1e-4 <= abs(t) < 1e16):  # (NaN and infinities fail this too)
        return None
    data: dict[str, Any] = {
        "messages": None if request.messages is None else [m.wire() for m in request.messages],
        "prompt": request.prompt, "stop": request.stop, "max_tokens": request.max_tokens,
        "temperature": t, "seed": request.seed,
    }
    if request.continuation is not None:
        data["continuation"] = request.continuation
    if request.tool_choice is not None:
        data["tool_choice"] = request.tool_choice
    try:
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # (orjson.JSONEncodeError) an integer beyond 64 bits, a lone surrogate
        return None


class RecordedCall(BaseModel):
    """One call. ``request`` may be omitted when only its ``fingerprint`` was kept."""

    index: int
    request: ChatRequest | None = None
    fingerprint: str | None = None
    response: ChatResponse


class Recording(BaseModel):
    """The calls of one run, in order."""

    model: str = ""
    calls: list[RecordedCall] = Field(default_factory=list)

    def __len__(self) -> int:
        return len(self.calls)


OnRecord = Callable[[RecordedCall], Awaitable[None] | None]


class RecordingModel(WrapperModel):
    """Passes calls to ``wrapped`` and records them (failed calls are not recorded)."""

    def __init__(
        self,
        inner: ChatModel,
        on_record: OnRecord | None = None,
        recording: Recording | None = None,
    ) -> None:
        super().__init__(inner)
        self.on_record = on_record
        self.recording = recording if recording is not None else Recording(model=inner.name)

    @property
    def inner(self) -> ChatModel:
        return self.wrapped

    async def complete(self, request: ChatRequest) -> ChatResponse:
        response = await self.wrapped.complete(request)
        await self._record(request, response)
        return response

    async def wrap_score(self, prompt: str, continuation: str) -> list[float] | None:
        logprobs: list[float] | None = await self.wrapped.score(  # type: ignore[attr-defined]
            prompt, continuation)
        response = ChatResponse(text="", model=self.name, simulated=self.simulated,
                                logprobs=logprobs)
        await self._record(scoring_request(prompt, continuation), response)
        return logprobs

    async def _record(self, request: ChatRequest, response: ChatResponse) -> None:
        call = RecordedCall(index=len(self.recording.calls), request=request, response=response)
        self.recording.calls.append(call)
        if self.on_record is not None:
            out = self.on_record(call)
            if isawaitable(out):
                await out


def _snippet(text: str, at: int) -> str:
    start = max(0, at - _SNIPPET // 2)
    piece = text[start : start + _SNIPPET]
    return ("…" if start else "") + piece + ("…" if start + _SNIPPET < len(text) else "")


def _text_diff(label: str, recorded: str, got: str) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(recorded, got, strict=False)) if a != b),
        min(len(recorded), len(got)),
    )
    return (
        f"{label} differs at character {at}: recorded {_snippet(recorded, at)!r}, "
        f"got {_snippet(got, at)!r}"
    )


def _messages_diff(recorded: list[Message], got: list[Message]) -> str:
    for i, (a, b) in enumerate(zip(recorded, got, strict=False)):
        if a.role != b.role:
            return f"messages[{i}].role: recorded {a.role!r}, got {b.role!r}"
        if a.content != b.content:
            return _text_diff(f"messages[{i}].content", a.content, b.content)
        if a.tool_calls != b.tool_calls or a.tool_call_id != b.tool_call_id:
            return f"messages[{i}]: the tool calls or the call answered differ"
    return f"messages: recorded {len(recorded)} messages, got {len(got)}"


def request_diff(recorded: ChatRequest, got: ChatRequest) -> list[str]:
    """What differs between two requests (ignoring ``role``); empty when they match."""
    diffs: list[str] = []
    for field in _COMPARED:
        a, b = getattr(recorded, field), getattr(got, field)
        if a == b:
            continue
        if field == "messages" and a is not None and b is not None:
            diffs.append(_messages_diff(a, b))
        elif field == "prompt" and a is not None and b is not None:
            diffs.append(_text_diff("prompt", a, b))
        elif field in ("tools", "json_schema"):
            diffs.append(f"{field} differ")
        elif field in ("messages", "prompt"):
            shape = "set" if a is not None else "not set"
            diffs.append(f"{field}: recorded {shape}, got {'set' if b is not None else 'not set'}")
        else:
            diffs.append(f"{field}: recorded {a!r}, got {b!r}")
    return diffs


class ReplayCursor:
    """Position in a recording. Several ``ReplayModel``s (e.g. executor and planner) sharing
    one cursor replay one recording in its global call order; ``live`` counts the calls they
    sent live after it (0: everything so far came from the recording)."""

    def __init__(self) -> None:
        self.position = 0
        self.live = 0


class ReplayModel(WrapperModel):
    """Answers from ``recording`` in order, then from ``live`` (if given).

    ``replayed`` counts answers taken from the recording, ``live_calls`` those from ``live``.
    Replayed responses keep their recorded usage and latency. Scoring calls are replayed too
    (``score`` is offered when ``live`` scores, or without ``live``).
    """

    def __init__(
        self,
        recording: Recording,
        live: ChatModel | None = None,
        name: str | None = None,
        cursor: ReplayCursor | None = None,
    ) -> None:
        self.wrapped = live  # type: ignore[assignment]  # None: answers from the recording only
        self.recording = recording
        self.live = live
        self.cursor = cursor or ReplayCursor()
        self.name = name or (live.name if live is not None else recording.model or "replay")
        if live is not None:
            self.simulated = live.simulated
        else:
            self.simulated = all(c.response.simulated for c in recording.calls)
        self.replayed = 0
        self.live_calls = 0

    def can_score(self) -> bool:
        return self.live is None or can_score(self.live)

    @property
    def position(self) -> int:
        """Index of the next call."""
        return self.replayed + self.live_calls

    @property
    def remaining(self) -> int:
        """Recorded calls not replayed yet."""
        return len(self.recording.calls) - self.cursor.position

    def _replay(self, request: ChatRequest) -> ChatResponse | None:
        """The recorded answer to ``request`` (``None``: the recording is exhausted)."""
        if self.cursor.position >= len(self.recording.calls):
            if self.live is None:
                raise ReplayDivergence(
                    f"recording exhausted after {len(self.recording.calls)} calls: call "
                    f"{self.position} (role {request.role!r}) has no recorded answer and no "
                    "live model is set")
            if self.live_calls == 0:
                logger.info("replay finished after %d calls; continuing live", self.replayed)
            self.live_calls += 1
            self.cursor.live += 1
            return None
        index = self.cursor.position
        recorded = self.recording.calls[index]
        if recorded.request is not None:
            diffs = request_diff(recorded.request, request)
        elif recorded.fingerprint != request_fingerprint(request):
            diffs = ["request fingerprint differs (prompt, stop or sampling changed)"]
        else:
            diffs = []
        if diffs:
            raise ReplayDivergence(
                f"replay diverged at call {index} (role {request.role!r}): " + "; ".join(diffs))
        self.replayed += 1
        self.cursor.position += 1
        if isinstance(self.live, FollowsReplay):
            self.live.replayed(request, recorded.response)
        return recorded.response.model_copy(deep=True)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        recorded = self._replay(request)
        if recorded is not None:
            return recorded
        return await self._live().complete(request)

    async def wrap_score(self, prompt: str, continuation: str) -> list[float] | None:
        recorded = self._replay(scoring_request(prompt, continuation))
        if recorded is not None:
            return recorded.logprobs
        logprobs: list[float] | None = await self._live().score(  # type: ignore[attr-defined]
            prompt, continuation)
        return logprobs

    def _live(self) -> ChatModel:
        if self.live is None:  # _replay raises first; kept for the type
            raise ReplayDivergence("no live model is set")
        return self.live
