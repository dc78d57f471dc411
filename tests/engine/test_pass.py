"""PASS: a batch of actions runs concurrently (where the environment allows), a summarizer
condenses the results, and ``pass_output`` decides what the agent gets."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from typing import Any, ClassVar

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.spec_agent.actions import batch_mode
from adapt.engine.executors.spec_agent.pass_output import (
    ALPHA,
    can_score,
    choose,
    normalized_score,
    raw_results,
    summarizer_prompt,
)
from adapt.engine.tree import TaskResult
from adapt.envs.base import StepResult
from adapt.envs.calculator import PROBLEMS, Calculator
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

QUESTION = PROBLEMS[0].question
PLAN = "[Thought] I need the apples in the bags and the eaten apples.\n"
BATCH = (PLAN + "[Action] calculator\n[Action Input] 3 * 12\n"
         "[Action] calculator\n[Action Input] 5 * 1\n")
SUMMARY = "36 apples in the bags, 5 eaten."  # shorter than the raw list below
RAW = "1. 36\n2. 5"
FINAL = "[Final Thought] 36 - 5 = 31.\n[Answer] 31"


class ScoringModel(ScriptedModel):
    """A scripted model that also scores continuations: ``logprobs[continuation]``."""

    def __init__(self, replies: list[str], logprobs: dict[str, list[float] | None]) -> None:
        super().__init__(replies)
        self.logprobs = logprobs
        self.scored: list[tuple[str, str]] = []

    async def score(self, prompt: str, continuation: str) -> list[float] | None:
        self.scored.append((prompt, continuation))
        return self.logprobs[continuation]


async def run_pass(replies: list[str], model: ScriptedModel | None = None, env: Any = None,
                   **executor: Any) -> tuple[TaskResult, MemorySink, ScriptedModel]:
    env = env if env is not None else Calculator()
    model = model if model is not None else ScriptedModel(replies)
    sink = MemorySink()
    config = RunConfig(strategy="react", d_max=1,
                       executor={"kind": "spec", "spec": "pass", **executor})
    env_config = {"index": 0} if isinstance(env, Calculator) else {}
    result = await run_task(env, env_config, config, model, sink=sink)
    return result, sink, model


def sum_step(sink: MemorySink) -> Any:
    return next(s for s in sink.steps[1] if s.kind == "thought" and s.extra
                and s.extra.get("state") == "Sum")


# -- end to end on the calculator -------------------------------------------------------------
async def test_pass_end_to_end() -> None:
    result, sink, model = await run_pass([BATCH, SUMMARY, FINAL], pass_output="summary")
    agent, summarizer, final = model.requests
    assert agent.stop == ["[Question]", "[Summary]"] and summarizer.role == "summarizer"
    assert summarizer.prompt == summarizer_prompt(
        QUESTION, "I need the apples in the bags and the eaten apples.", ["36", "5"])
    assert summarizer.prompt.endswith(  # the paper's figure 7 format
        f"Statements: 36 5\nContext: {QUESTION}\n"
        "Goal: I need the apples in the bags and the eaten apples.\nSummary:")
    assert final.prompt is not None and final.prompt.endswith(
        "[Action Input] 5 * 1\n[Summary] 36 apples in the bags, 5 eaten.\n")
    assert [(s.kind, s.text, s.observation) for s in sink.steps[1]] == [
        ("thought", "I need the apples in the bags and the eaten apples.", ""),
        ("action", "calculator 3 * 12", "36"),
        ("action", "calculator 5 * 1", "5"),
        ("thought", SUMMARY, ""),
        ("thought", "36 - 5 = 31.", ""),
        ("action", "answer 31", "Correct answer."),
    ]
    assert sink.steps[1][1].extra == {"state": "Sum", "action": "calculator", "input": "3 * 12",
                                      "batch": "async"}
    assert sum_step(sink).extra == {"state": "Sum", "summary": SUMMARY, "raw_results": RAW,
                                    "pass_output": "summary", "rule": "summary"}
    assert result.status == "succeeded" and result.reward == 1.0
    assert set(result.usage_by_role) == {"executor", "summarizer"}


# -- concurrency -------------------------------------------------------------------------------
class _Tools(ToyEnv):
    """Tool calls ``lookup <x>`` that take a while and record when they ran."""

    delay = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[str, float, float]] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def _enter(self) -> float:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        return time.monotonic()

    def _leave(self, action: str, started: float) -> None:
        with self.lock:
            self.active -= 1
            self.spans.append((action, started, time.monotonic()))

    @staticmethod
    def _result(action: str) -> StepResult:
        return StepResult(f"{action.removeprefix('lookup ')} found.")


class AsyncTools(_Tools):
    async def astep(self, action: str) -> StepResult:
        started = self._enter()
        await asyncio.sleep(self.delay)
        self._leave(action, started)
        return self._result(action)


class ThreadTools(_Tools):
    concurrent_actions: ClassVar[bool] = True

    def step(self, action: str) -> StepResult:
        started = self._enter()
        time.sleep(self.delay)
        self._leave(action, started)
        return self._result(action)


class StatefulTools(_Tools):
    """Says nothing about concurrency: its actions run one after the other."""

    def step(self, action: str) -> StepResult:
        return ThreadTools.step(self, action)  # type: ignore[arg-type]


THREE = ("[Thought] Look up a, b and c.\n" + "".join(
    f"[Action] lookup\n[Action Input] {x}\n" for x in "abc"))
DONE = "[Final Thought] All found.\n[Answer] a, b and c found. Task completed!"


def overlapping(spans: list[tuple[str, float, float]]) -> bool:
    return any(s1 < e2 and s2 < e1 for i, (_, s1, e1) in enumerate(spans)
               for (_, s2, e2) in spans[i + 1:])


@pytest.mark.parametrize(("env_class", "mode"), [(AsyncTools, "async"),
                                                 (ThreadTools, "threads")])
async def test_a_batch_runs_concurrently(env_class: type[_Tools], mode: str) -> None:
    env = env_class()
    assert batch_mode(env) == mode
    started = time.monotonic()
    result, sink, _ = await run_pass([THREE, "a, b and c were found.", DONE], env=env,
                                     pass_output="raw")
    assert env.max_active == 3 and overlapping(env.spans)
    assert time.monotonic() - started < 3 * env.delay  # not one after the other
    actions = [s for s in sink.steps[1] if s.kind == "action"]
    assert [s.text for s in actions] == ["lookup a", "lookup b", "lookup c"]  # in written order
    assert {s.extra["batch"] for s in actions if s.extra} == {mode}
    assert sum_step(sink).text == "1. a found.\n2. b found.\n3. c found."
    assert result.status == "succeeded"


async def test_an_environment_that_does_not_opt_in_runs_its_batch_in_order() -> None:
    env = StatefulTools()
    assert batch_mode(env) == "sequential"
    _, sink, _ = await run_pass([THREE, "a, b and c were found.", DONE], env=env)
    assert env.max_active == 1 and not overlapping(env.spans)
    assert [a for a, _, _ in env.spans] == ["lookup a", "lookup b", "lookup c"]
    assert {s.extra["batch"] for s in sink.steps[1] if s.kind == "action" and s.extra} == {
        "sequential"}


# -- what the agent gets -------------------------------------------------------------------
@pytest.mark.parametrize(("setting", "summary", "chosen", "rule"), [
    ("summary", SUMMARY, "summary", "summary"),
    ("raw", SUMMARY, "raw", "raw"),
    ("shorter", SUMMARY, "raw", "shorter"),  # "1. 36\n2. 5" is shorter than the summary
    ("shorter", "36; 5", "summary", "shorter"),
    ("auto", SUMMARY, "raw", "shorter"),  # a model that cannot score: the shorter rule
])
async def test_pass_output_rules(setting: str, summary: str, chosen: str, rule: str) -> None:
    _, sink, model = await run_pass([BATCH, summary, FINAL], pass_output=setting)
    step = sum_step(sink)
    assert step.extra["pass_output"] == chosen and step.extra["rule"] == rule
    expected = summary if chosen == "summary" else RAW
    assert step.text == expected
    assert model.prompts[2].endswith(f"[Summary] {expected}\n")


@pytest.mark.parametrize(("raw_lp", "chosen"), [
    ([-0.1, -0.1, -0.1], "raw"),  # the raw results are likelier
    ([-5.0, -5.0, -5.0], "summary"),
])
@pytest.mark.parametrize("setting", ["logprob", "auto"])
async def test_logprob_rule_with_a_scoring_model(setting: str, raw_lp: list[float],
                                                 chosen: str) -> None:
    summary_lp = [-0.5] * 8
    model = ScoringModel([BATCH, SUMMARY, FINAL], {SUMMARY: summary_lp, RAW: raw_lp})
    _, sink, _ = await run_pass([], model=model, pass_output=setting)
    step = sum_step(sink)
    assert step.extra["rule"] == "logprob" and step.extra["pass_output"] == chosen
    assert step.extra["scores"] == {"summary": normalized_score(summary_lp),
                                    "raw": normalized_score(raw_lp)}
    # both are scored as continuations of the agent's context up to "[Summary] "
    context = model.prompts[0] + BATCH + "[Summary] "
    assert sorted(model.scored) == sorted([(context, SUMMARY), (context, RAW)])
    # ... and both scoring calls are in the tree, like every LLM call
    scorer = [c for c in sink.calls if c.role == "scorer"]
    assert sorted(c.prompt or "" for c in scorer) == sorted([context + SUMMARY, context + RAW])
    assert sorted(c.completion_tokens for c in scorer) == sorted([len(summary_lp), len(raw_lp)])
    assert all(c.completion == "" and c.usage_estimated for c in scorer)


async def test_logprob_falls_back_to_shorter_when_the_model_cannot_score() -> None:
    _, sink, _ = await run_pass([BATCH, SUMMARY, FINAL], pass_output="logprob")
    extra = sum_step(sink).extra
    assert extra["rule"] == "shorter" and extra["pass_output"] == "raw"
    assert extra["fallback"] == "model 'scripted' cannot score continuations"


async def test_logprob_falls_back_when_no_logprobs_come_back() -> None:
    model = ScoringModel([BATCH, "36; 5", FINAL], {"36; 5": None, RAW: None})
    _, sink, _ = await run_pass([], model=model, pass_output="logprob")
    extra = sum_step(sink).extra
    assert extra["rule"] == "shorter" and extra["pass_output"] == "summary"
    assert extra["fallback"] == "the model returned no log-probabilities"


async def test_an_empty_summary_gives_the_raw_results() -> None:
    choice = await choose("summary", None, "", "  ", RAW)
    assert choice.output == RAW and choice.fallback == "the summary was empty"
    assert (await choose("shorter", None, "", "", RAW)).chosen == "raw"


def test_length_normalised_score() -> None:
    assert ALPHA == 0.6
    lp = [-1.0, -2.0]
    assert normalized_score(lp) == pytest.approx(-3.0 / ((7 ** 0.6) / (6 ** 0.6)))
    assert normalized_score([-1.0]) == pytest.approx(-1.0)  # (5 + 1)^a / 6^a = 1
    # longer continuations are penalised less per token than a plain sum would
    assert normalized_score([-1.0] * 20) > sum([-1.0] * 20)
    assert math.isclose(normalized_score([]), 0.0)


def test_raw_results_are_a_numbered_list() -> None:
    assert raw_results([" 36 ", "5"]) == RAW


def test_can_score() -> None:
    assert can_score(ScoringModel([], {})) and not can_score(ScriptedModel([]))
