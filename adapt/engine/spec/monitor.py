"""The decoding monitor: validate text against a spec, and say how to correct it.

Validation splits the text at every state prompt into (state, content) pairs and walks the
spec's FSM. At the first pair that is not a valid next state (a skipped, repeated or invented
state), a state whose content is missing or does not match its pattern, or text outside any
state, everything from there is discarded. The correction ("valid state prefixing") is the
longest common prefix of the prompts of the valid next states, e.g. ``[Action`` for
``[Action]`` and ``[Action Input]``; it starts on a new line when the kept text does not end
with whitespace. A content violation keeps the state's prompt and lets the model rewrite the
content. When generation has ended (``final=True``) before the behaviour is complete and no
environment-supplied state is due, the correction prefixes the states on a shortest path to
completion (e.g. ``Execution Order:`` for a plan that stopped after its steps).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from adapt.engine.spec.model import Spec

ViolationKind = Literal["invalid_transition", "unknown_state", "bad_content", "empty_content",
                        "text_before_first_state", "incomplete"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One (state, content) pair of the split text; ``state`` is None for text outside states."""

    state: str | None
    start: int  # where the prompt starts
    content_start: int
    end: int

    def content(self, text: str) -> str:
        return text[self.content_start:self.end]


@dataclass(slots=True)
class CheckResult:
    valid: bool
    kept: str  # the text up to the first violation (all of it when valid)
    prefix: str  # the correction to append to ``kept`` ("" when valid)
    states: list[str] = field(default_factory=list)  # the valid states walked, in order
    next_states: list[str] = field(default_factory=list)  # valid next states after ``states``
    complete: bool = False  # the behaviour is satisfied by ``states``
    awaiting: list[str] = field(default_factory=list)  # env-supplied states that may come next
    violation: str | None = None  # what went wrong, in words
    kind: ViolationKind | None = None

    @property
    def corrected(self) -> str:
        """``kept + prefix``: the text to resume generation from."""
        return self.kept + self.prefix

    def summary(self) -> dict[str, object]:
        return {"valid": self.valid, "kind": self.kind, "violation": self.violation,
                "states": self.states, "prefix": self.prefix}


def common_prefix(texts: list[str]) -> str:
    if not texts:
        return ""
    first, last = min(texts), max(texts)
    n = 0
    while n < len(first) and n < len(last) and first[n] == last[n]:
        n += 1
    return first[:n]


class Monitor:
    """Validates text against ``spec``. Stateless: ``check`` takes the whole text so far."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        prompts = sorted((s.text for s in spec.states), key=len, reverse=True)
        alternatives = "|".join(re.escape(p) for p in prompts)
        self._by_text = {s.text: s.name for s in spec.states}
        self._inline = re.compile(alternatives)
        self._line = re.compile(r"[ \t]*(" + alternatives + ")")
        self._patterns = {s.name: re.compile(s.pattern, re.DOTALL)
                          for s in spec.states if s.pattern is not None}

    # -- splitting --------------------------------------------------------------------------
    def split(self, text: str) -> list[Segment]:
        if self.spec.layout == "lines":
            return self._split_lines(text)
        return self._split_inline(text)

    def _split_inline(self, text: str) -> list[Segment]:
        marks: list[tuple[int, int, str | None]] = [
            (m.start(), m.end(), self._by_text[m.group(0)]) for m in self._inline.finditer(text)
        ]
        marker = self.spec.invented_marker
        if marker is not None:
            taken = [(s, e) for s, e, _ in marks]
            for m in marker.finditer(text):
                if not any(s < m.end() and m.start() < e for s, e in taken):
                    marks.append((m.start(), m.end(), None))
        marks.sort()
        segments: list[Segment] = []
        if marks and text[:marks[0][0]].strip():
            segments.append(Segment(None, 0, 0, marks[0][0]))
        elif not marks and text.strip():
            segments.append(Segment(None, 0, 0, len(text)))
        for i, (start, end, name) in enumerate(marks):
            stop = marks[i + 1][0] if i + 1 < len(marks) else len(text)
            segments.append(Segment(name, start, end, stop))
        return segments

    def _split_lines(self, text: str) -> list[Segment]:
        segments: list[Segment] = []
        pos = 0
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            if body.strip():
                m = self._line.match(body)
                if m is None:
                    segments.append(Segment(None, pos, pos, pos + len(body)))
                else:
                    name = self._by_text[m.group(1)]
                    segments.append(Segment(name, pos + m.start(1), pos + m.end(1),
                                            pos + len(body)))
            pos += len(line)
        return segments

    # -- validation -------------------------------------------------------------------------
    def check(self, text: str, *, final: bool = False) -> CheckResult:
        """Validate ``text``. With ``final=True`` the text is finished: the last state's
        content is checked too, and stopping before the behaviour is complete is a violation
        (unless an environment-supplied state is due next)."""
        fsm = self.spec.fsm
        q = fsm.start
        walked: list[str] = []
        segments = self.split(text)
        for i, seg in enumerate(segments):
            last = i == len(segments) - 1
            if seg.state is None:
                if i == 0 and seg.start == 0 and not walked and self.spec.layout == "inline":
                    return self._violation(text, 0, q, walked, "text_before_first_state",
                                           "text before the first state prompt")
                shown = text[seg.start:seg.end].strip()[:40]
                what = ("an invented state" if self.spec.layout == "inline"
                        else "a line that starts with no state prompt")
                return self._violation(text, seg.start, q, walked, "unknown_state",
                                       f"{what}: {shown!r}")
            nq = fsm.step(q, seg.state)
            if nq is None:
                expected = " or ".join(fsm.next_names(q)) or "nothing (the behaviour is done)"
                after = f" after {walked[-1]}" if walked else " first"
                return self._violation(text, seg.start, q, walked, "invalid_transition",
                                       f"{seg.state}{after}; expected {expected}")
            state = self.spec.state(seg.state)
            finished = not last or final or (self.spec.layout == "lines"
                                             and text[seg.end:seg.end + 1] == "\n")
            if finished and not state.env_input:
                content = seg.content(text).strip()
                pattern = self._patterns.get(seg.state)
                if pattern is not None and not pattern.fullmatch(content):
                    return CheckResult(
                        valid=False, kept=text[:seg.content_start], prefix="", states=walked,
                        next_states=[seg.state], kind="bad_content",
                        violation=f"{seg.state} content {content[:60]!r} does not match "
                                  f"{pattern.pattern!r}")
                if pattern is None and not content:
                    return CheckResult(
                        valid=False, kept=text[:seg.content_start], prefix="", states=walked,
                        next_states=[seg.state], kind="empty_content",
                        violation=f"{seg.state} has no content")
            walked.append(seg.state)
            q = nq
        next_states = fsm.next_names(q)
        awaiting = [n for n in next_states if self.spec.state(n).env_input]
        complete = fsm.is_accepting(q)
        if final and not complete and not awaiting:
            names = fsm.closest_names(q) or next_states
            return CheckResult(
                valid=False, kept=text, prefix=self._prefix(text, names), states=walked,
                next_states=next_states, kind="incomplete",
                violation=f"generation stopped before the behaviour was complete; expected "
                          f"{' or '.join(next_states)}")
        return CheckResult(valid=True, kept=text, prefix="", states=walked,
                           next_states=next_states, complete=complete, awaiting=awaiting)

    def _violation(self, text: str, at: int, q: int, walked: list[str], kind: ViolationKind,
                   message: str) -> CheckResult:
        kept = text[:at]
        names = self.spec.fsm.next_names(q)
        return CheckResult(valid=False, kept=kept, prefix=self._prefix(kept, names),
                           states=walked, next_states=names, kind=kind, violation=message)

    def _prefix(self, kept: str, names: list[str]) -> str:
        lcp = common_prefix([self.spec.state(n).text for n in names])
        if lcp and kept and not kept[-1].isspace():
            return "\n" + lcp
        return lcp
