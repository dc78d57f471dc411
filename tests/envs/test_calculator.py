"""The calculator tool environment: safe arithmetic, answers, configs, conformance, registry."""

from __future__ import annotations

import asyncio
import time

import pytest

from adapt.envs import registry
from adapt.envs.calculator import PROBLEMS, CalculationError, Calculator, evaluate
from adapt.envs.calculator.arithmetic import format_number
from adapt.envs.calculator.env import parse_answer
from adapt.envs.testing import check_environment
from adapt.errors import InvalidConfig


def test_conforms() -> None:
    report = check_environment(
        Calculator, actions=["calculator 2 + 3", "calculator 1/0", "answer 7", "answer 31"])
    assert "deterministic_steps" in report.passed and "prompt_templates" in report.passed
    assert report.configs == [{"index": 0}, {"seed": 7},
                              {"question": "What is 6 times 7?", "answer": 42}]


def test_registered_as_a_builtin() -> None:
    assert registry.get("calculator") is Calculator
    info = registry.environment_info("calculator")
    assert "calculator <expression>" in info.action_grammar


@pytest.mark.parametrize(("expression", "value"), [
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("-3 + 10", 7), ("7 / 2", 3.5), ("7 // 2", 3),
    ("7 % 4", 3), ("2 ** 10", 1024), ("1,200 + 1", 1201), ("6 × 7", 42), ("--4", 4),
    ("`12 - 2`", 10), ("1.5 * 4", 6.0),
])
def test_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(("expression", "message"), [
    ("__import__('os').system('true')", "function calls are not allowed"),
    ("x + 1", "unknown name 'x'"),
    ("2 ** 100000", "exponents above 100"),
    ("10 ** 99 * 10 ** 99", "too large"),
    ("1 / 0", "division by zero"),
    ("5 % 0", "division by zero"),
    ("2 ^ 3", r"'\^' is not a power"),
    ("'a' * 3", "only numbers"),
    ("True + 1", "only numbers"),
    ("[1, 2]", "List is not allowed"),
    ("(-8) ** 0.5", "not a real number"),
    ("1e308 * 10", "too large"),
    ("1e99 * 1e99 / 1e99", "too large"),
    ("2 +", "cannot parse"),
    ("", "empty"),
    ("1+" * 300 + "1", "longer than 500"),
    ("(1).real", "Attribute is not allowed"),
    ("1 if 1 else 2", "IfExp is not allowed"),
])
def test_unsafe_or_broken_expressions_are_refused(expression: str, message: str) -> None:
    with pytest.raises(CalculationError, match=message):
        evaluate(expression)


def test_format_number() -> None:
    assert [format_number(v) for v in (12, 12.0, 3.5, 1 / 3)] == ["12", "12", "3.5",
                                                                  "0.3333333333"]


def test_calculator_and_answer_actions() -> None:
    env = Calculator()
    observation = env.reset(index=0)
    assert observation == PROBLEMS[0].question == env.goal
    assert env.step("calculator 3 * 12 - 5").observation == "31"
    assert env.step("Calculator: 3 ** 2").observation == "9"
    bad = env.step("calculator import os")
    assert bad.observation.startswith("Error: cannot parse") and env.is_failure(bad.observation)
    wrong = env.step("answer 30")
    assert (wrong.observation, wrong.reward, wrong.done) == ("Incorrect answer.", 0.0, False)
    assert env.is_failure(wrong.observation)
    not_a_number = env.step("answer many")
    assert not_a_number.observation.startswith("Incorrect answer.") and not not_a_number.done
    right = env.step("answer 31 apples")
    assert (right.observation, right.reward, right.done) == ("Correct answer.", 1.0, True)
    assert env.salient_state() == "Calculations so far: 3 * 12 - 5 = 31; 3 ** 2 = 9"
    unknown = env.step("search apples")
    assert unknown.observation.startswith("Unknown action 'search apples'")


@pytest.mark.parametrize(("text", "value"), [
    ("1200", 1200.0), ("$1,200", 1200.0), ("1,200 dollars", 1200.0), ("3/4", 0.75),
    ("-5", -5.0), ("The answer is 42.", 42.0), ("none", None),
])
def test_parse_answer(text: str, value: float | None) -> None:
    assert parse_answer(text) == value


def test_answers_are_compared_within_a_tolerance() -> None:
    env = Calculator()
    env.reset(question="What is a third of 1?", answer=1 / 3)
    assert env.step("answer 0.3333333").reward == 1.0
    env.reset(question="What is a third of 1?", answer=1 / 3)
    assert env.step("answer 0.3333").reward == 0.0


def test_problems_are_selected_by_index_seed_or_given() -> None:
    env = Calculator()
    assert env.reset() == PROBLEMS[0].question
    assert env.reset(index=3) == PROBLEMS[3].question
    assert env.reset(seed=len(PROBLEMS) + 2) == PROBLEMS[2].question
    assert env.reset(question=" What is 6 times 7? ", answer=42) == "What is 6 times 7?"
    assert env.step("answer 42").done


@pytest.mark.parametrize(("config", "message"), [
    ({"index": 0, "seed": 1}, "at most one of index, seed or question"),
    ({"question": "What is 1 + 1?"}, "question and answer go together"),
    ({"index": len(PROBLEMS)}, "index: Input should be less than"),
    ({"colour": "red"}, "colour: Extra inputs are not permitted"),
])
def test_bad_configs_say_what_is_wrong(config: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidConfig, match=message):
        Calculator().reset(**config)


def test_every_builtin_problem_has_an_integer_answer_and_a_unique_question() -> None:
    assert len(PROBLEMS) == 20
    assert all(float(p.answer).is_integer() for p in PROBLEMS)
    assert len({p.question for p in PROBLEMS}) == len(PROBLEMS)


async def test_astep_is_a_coroutine_and_matches_step() -> None:
    env = Calculator()
    env.reset(index=1)
    started = time.monotonic()
    results = await asyncio.gather(env.astep("calculator 48 / 6"), env.astep("answer 72"))
    assert time.monotonic() - started < 1
    assert [r.observation for r in results] == ["8", "Correct answer."]
    assert Calculator.concurrent_actions is True and Calculator.answer_action == "answer"


def test_spec_examples_template_exists() -> None:
    text = Calculator().prompt_template("spec_examples")
    assert "[Summary]" in text and "[Observation]" in text
