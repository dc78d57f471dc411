"""Monitored generation: generate in chunks, validate each, correct and resume.

The model continues ``prompt + trace + generated`` until a stop sequence (the prompts of the
environment-supplied states, plus the request's own stops) or the chunk-size limit
(``max_tokens``). Each chunk is validated by the :class:`Monitor`; on a violation the text is
cut at the violation, the correction prefix is appended and generation resumes. A correction
that would resend a prompt already sent (e.g. nothing kept and nothing to prefix, which a
deterministic model would answer the same way), or one beyond ``max_corrections``, is not made:
the raw text is returned and the caller handles it as it would without a monitor.

Every chunk is one LLM call; the caller's ``call`` receives an ``annotate`` function that turns
the response into the call's monitor record (stored with the call in the tree).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from adapt.engine.spec.monitor import CheckResult, Monitor
from adapt.llm.base import ChatRequest, ChatResponse

Annotate = Callable[[ChatResponse], dict[str, Any]]
Caller = Callable[[ChatRequest, Annotate], Awaitable[ChatResponse]]
Finish = Literal["complete", "awaiting", "gave_up", "length", "max_chunks"]


@dataclass(slots=True)
class MonitorTally:
    """Counts over one generation (or, added up, a task)."""

    validations: int = 0
    violations: int = 0
    corrections: int = 0
    uncorrected: int = 0  # violations left in place (no useful correction, or too many)

    def add(self, other: MonitorTally) -> None:
        self.validations += other.validations
        self.violations += other.violations
        self.corrections += other.corrections
        self.uncorrected += other.uncorrected

    def as_dict(self) -> dict[str, int]:
        return {"validations": self.validations, "violations": self.violations,
                "corrections": self.corrections, "uncorrected": self.uncorrected}


@dataclass(slots=True)
class Generation:
    text: str  # what the model added after the trace (corrected; raw when it gave up)
    check: CheckResult  # the last validation of ``trace + text``
    finish: Finish
    tally: MonitorTally = field(default_factory=MonitorTally)
    responses: list[ChatResponse] = field(default_factory=list)


def _finished_before(result: CheckResult) -> bool:
    """The violation is text after a complete behaviour (nothing may follow its last state)."""
    return (result.kind == "invalid_transition" and not result.next_states
            and bool(result.states))


def _cut_at_env_prompt(monitor: Monitor, text: str) -> str:
    """A chunk ends where an environment-supplied state's prompt starts (if the backend did
    not honour the stop sequence, the model must not write the environment's text)."""
    cut = len(text)
    for state in monitor.spec.env_input_states:
        at = text.find(state.text)
        if at != -1:
            cut = min(cut, at)
    return text[:cut]


async def monitored_generate(
    call: Caller,
    request: ChatRequest,
    monitor: Monitor,
    *,
    trace: str = "",
    max_corrections: int = 3,
    max_chunks: int = 8,
    continue_on_length: bool = True,
) -> Generation:
    """Generate the continuation of ``request.prompt + trace`` under ``monitor``.

    ``trace`` is the spec-governed text so far (already valid): the monitor checks
    ``trace + generated``; the model sees ``request.prompt + trace + generated``. With
    ``continue_on_length`` off, ``request.max_tokens`` is the whole generation's budget, not a
    chunk size: a chunk cut by it ends the generation (as it would without a monitor).
    """
    if request.prompt is None:
        raise ValueError("monitored generation continues a text prompt; got a chat request")
    base = request.prompt
    stops = list(dict.fromkeys([*request.stop, *(s.text for s in monitor.spec.env_input_states)]))
    tally = MonitorTally()
    generated = ""
    sent: set[str] = set()
    responses: list[ChatResponse] = []
    last_check: CheckResult | None = None
    for _ in range(max_chunks):
        prompt = base + trace + generated
        sent.add(prompt)
        chunk_request = request.model_copy(update={"prompt": prompt, "stop": stops})
        outcome: dict[str, Any] = {}

        def annotate(response: ChatResponse, generated: str = generated,
                     outcome: dict[str, Any] = outcome) -> dict[str, Any]:
            text = _cut_at_env_prompt(monitor, response.text)
            final = response.finish_reason != "length"
            result = monitor.check(trace + generated + text, final=final)
            outcome.update(text=text, result=result, final=final)
            record: dict[str, Any] = {"validations": 1, "violations": 0, "corrections": 0}
            if not result.valid:
                record["violations"] = 1
                record["kind"] = result.kind
                record["violation"] = result.violation
                resumed = base + result.corrected
                if _finished_before(result):
                    # text after the end of the behaviour: cutting it is the whole correction
                    record["corrections"] = 1
                    record["corrected"] = True
                    record["kept_chars"] = len(result.kept) - len(trace)
                    record["prefix"] = ""
                    outcome["finished"] = True
                elif (len(result.kept) < len(trace) or resumed in sent
                        or tally.corrections >= max_corrections):
                    record["corrected"] = False
                    outcome["correct"] = False
                else:
                    record["corrections"] = 1
                    record["corrected"] = True
                    record["kept_chars"] = len(result.kept) - len(trace)
                    record["prefix"] = result.prefix
                    outcome["correct"] = True
            return record

        response = await call(chunk_request, annotate)
        responses.append(response)
        if "result" not in outcome:  # the caller did not annotate (e.g. a replayed call)
            annotate(response)
        result: CheckResult = outcome["result"]
        last_check = result
        tally.validations += 1
        if not result.valid:
            tally.violations += 1
            if outcome.get("finished"):
                tally.corrections += 1
                text = result.kept[len(trace):]
                return Generation(text, monitor.check(trace + text, final=True), "complete",
                                  tally, responses)
            if not outcome.get("correct"):
                tally.uncorrected += 1
                return Generation(generated + outcome["text"], result, "gave_up", tally,
                                  responses)
            tally.corrections += 1
            generated = result.corrected[len(trace):]
            continue
        generated += outcome["text"]
        if not outcome["final"]:
            if continue_on_length:
                continue  # chunk-size limit reached: keep generating
            return Generation(generated, result, "length", tally, responses)
        finish: Finish = "awaiting" if result.awaiting and not result.complete else "complete"
        return Generation(generated, result, finish, tally, responses)
    if last_check is None:  # max_chunks < 1: nothing was generated
        last_check = monitor.check(trace + generated)
    return Generation(generated, last_check, "max_chunks", tally, responses)
