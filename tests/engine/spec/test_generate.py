"""Monitored generation: the corrected text, the exact resumed prompts, the per-call records."""

from __future__ import annotations

from typing import Any

from adapt.engine.spec import Monitor, Spec
from adapt.engine.spec.generate import Annotate, monitored_generate
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.llm.testing import ScriptedModel

HEADER = "Answer with the calculator.\n\n"
TRACE = "[Question] What is 2+3?\n"


class Recorder:
    """A caller that records the monitor's record of every call."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.records: list[dict[str, Any]] = []

    async def __call__(self, request: ChatRequest, annotate: Annotate) -> ChatResponse:
        response: ChatResponse = await self.model.complete(request)
        self.records.append(annotate(response))
        return response


class Chunked:
    """Replies with a finish reason each: ``length`` means the chunk-size limit was hit."""

    simulated = True
    name = "chunked"

    def __init__(self, replies: list[tuple[str, str]]) -> None:
        self.replies = replies
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        text, finish = self.replies[len(self.requests)]
        self.requests.append(request)
        return ChatResponse(text=text, finish_reason=finish)


async def test_a_skipped_state_is_corrected_and_generation_resumes() -> None:
    model = ScriptedModel([
        "[Thought] I add them.\n[Action Input] 2+3",  # skips [Action]
        " calculator\n[Action Input] 2+3\n",
    ])
    caller = Recorder(model)
    request = ChatRequest(prompt=HEADER, stop=["\n\n"], max_tokens=64)
    gen = await monitored_generate(caller, request, Monitor(Spec.builtin("react")), trace=TRACE)
    assert model.prompts == [
        HEADER + TRACE,
        HEADER + TRACE + "[Thought] I add them.\n[Action]",
    ]
    # the stop sequences are the caller's plus the env-supplied states' prompts
    assert model.requests[0].stop == ["\n\n", "[Observation]"]
    assert gen.text == "[Thought] I add them.\n[Action] calculator\n[Action Input] 2+3\n"
    assert gen.finish == "awaiting" and gen.check.awaiting == ["Obs"]
    assert gen.tally.as_dict() == {"validations": 2, "violations": 1, "corrections": 1,
                                   "uncorrected": 0}
    assert caller.records[0] == {
        "validations": 1, "violations": 1, "corrections": 1, "kind": "invalid_transition",
        "violation": "Act-Inp after Tht; expected Act", "corrected": True,
        "kept_chars": len("[Thought] I add them.\n"), "prefix": "[Action]"}
    assert caller.records[1] == {"validations": 1, "violations": 0, "corrections": 0}


async def test_an_invented_and_a_repeated_state() -> None:
    model = ScriptedModel([
        "[Thought] add\n[Plan] 1. add",  # invented
        " calculator\n[Action] calculator",  # repeated
        " 2+3",
    ])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt=HEADER),
                                   Monitor(Spec.builtin("react")), trace=TRACE)
    assert model.prompts[1] == HEADER + TRACE + "[Thought] add\n[Action]"
    assert model.prompts[2] == HEADER + TRACE + ("[Thought] add\n[Action] calculator\n"
                                                 "[Action Input]")
    assert gen.text == "[Thought] add\n[Action] calculator\n[Action Input] 2+3"
    assert gen.tally.corrections == 2


async def test_the_model_must_not_write_the_environments_text() -> None:
    # a backend that ignores stop sequences: the chunk is cut at [Observation]
    model = ScriptedModel(["[Final Thought] 5\n[Answer] 5"])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt=HEADER),
                                   Monitor(Spec.builtin("react")), trace=TRACE)
    assert gen.finish == "complete" and gen.check.complete
    model = ScriptedModel(["[Thought] t\n[Action] c\n[Action Input] 1\n[Observation] 99 (made up)"])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt=HEADER),
                                   Monitor(Spec.builtin("react")), trace=TRACE)
    assert gen.text == "[Thought] t\n[Action] c\n[Action Input] 1\n"
    assert gen.finish == "awaiting"


async def test_stopping_early_is_completed() -> None:
    planner = Monitor(Spec.builtin("planner"))
    model = ScriptedModel(["Step 1: get logs\nStep 2: craft planks", " (Step 1 AND Step 2)"])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt="Plan:\n"), planner)
    assert model.prompts[1] == "Plan:\nStep 1: get logs\nStep 2: craft planks\nExecution Order:"
    assert gen.text == ("Step 1: get logs\nStep 2: craft planks\nExecution Order: "
                        "(Step 1 AND Step 2)")


async def test_no_useful_correction_gives_the_raw_text_back() -> None:
    # nothing kept and nothing to prefix: resending the same prompt would get the same answer
    model = ScriptedModel(["Here is my plan: get logs"])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt="Plan:\n"),
                                   Monitor(Spec.builtin("planner")))
    assert len(model.requests) == 1
    assert gen.finish == "gave_up" and gen.text == "Here is my plan: get logs"
    assert gen.tally.as_dict() == {"validations": 1, "violations": 1, "corrections": 0,
                                   "uncorrected": 1}


async def test_max_corrections() -> None:
    model = ScriptedModel(["[Thought] a\n[Answer] x", " b\n[Answer] y"])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt=HEADER),
                                   Monitor(Spec.builtin("react")), trace=TRACE,
                                   max_corrections=1)
    assert len(model.requests) == 2
    assert gen.finish == "gave_up"
    assert gen.text == "[Thought] a\n[Action] b\n[Answer] y"  # the raw text of the last chunk
    assert gen.tally.corrections == 1 and gen.tally.uncorrected == 1


async def test_chunks_cut_by_the_size_limit_are_continued_without_correction() -> None:
    model = Chunked([("[Thought] a long thou", "length"), ("ght\n[Action] calc", "length"),
                     ("\n[Action Input] 1", "stop")])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt=HEADER),
                                   Monitor(Spec.builtin("react")), trace=TRACE)
    assert [r.prompt for r in model.requests] == [
        HEADER + TRACE, HEADER + TRACE + "[Thought] a long thou",
        HEADER + TRACE + "[Thought] a long thought\n[Action] calc"]
    assert gen.text == "[Thought] a long thought\n[Action] calc\n[Action Input] 1"
    assert gen.tally.violations == 0 and gen.finish == "awaiting"


async def test_text_after_the_end_of_the_behaviour_is_cut_without_another_call() -> None:
    model = ScriptedModel(["[Final Thought] 5\n[Answer] 5\n[Question] What is 3+4?"])
    caller = Recorder(model)
    gen = await monitored_generate(caller, ChatRequest(prompt=HEADER),
                                   Monitor(Spec.builtin("react")), trace=TRACE)
    assert len(model.requests) == 1
    assert gen.finish == "complete" and gen.check.complete
    assert gen.text == "[Final Thought] 5\n[Answer] 5\n"
    assert gen.tally.as_dict() == {"validations": 1, "violations": 1, "corrections": 1,
                                   "uncorrected": 0}
    assert caller.records[0]["corrected"] is True and caller.records[0]["prefix"] == ""


async def test_without_continue_on_length_max_tokens_is_the_whole_budget() -> None:
    # a model that keeps writing valid Step lines is not asked for more once the budget is spent
    model = Chunked([("Step 1: a\nStep 2: b\nStep 3: c\nStep 4: d\nStep 5", "length"),
                     ("never asked", "stop")])
    gen = await monitored_generate(Recorder(model), ChatRequest(prompt="Plan:\n", max_tokens=16),
                                   Monitor(Spec.builtin("planner")), continue_on_length=False)
    assert len(model.requests) == 1
    assert gen.finish == "length" and gen.tally.violations == 0
    assert gen.text == "Step 1: a\nStep 2: b\nStep 3: c\nStep 4: d\nStep 5"
