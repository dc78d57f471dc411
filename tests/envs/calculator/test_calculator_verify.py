"""The calculator decides its question: a task never ends succeeded with reward 0."""

from __future__ import annotations

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.calculator import PROBLEMS, Calculator
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

DONE = "think: Task completed!"


def test_verify_decides_the_question_by_the_answers() -> None:
    env = Calculator()
    env.reset(index=0)
    question = PROBLEMS[0].question
    gold = PROBLEMS[0].answer
    check = env.verify(question)
    assert (check.verdict, check.evidence) == ("refuted", "no answer was submitted")
    assert env.verify("compute 3 * 12").verdict == "unknown"
    env.step(f"answer {gold + 1:g}")
    check = env.verify(question.upper() + " ")
    assert check.verdict == "refuted" and f"({gold + 1:g})" in check.evidence
    env.step(f"answer {gold:g}")
    assert env.verify(question).verdict == "confirmed"
    env.reset(index=0)  # a new episode forgets the answers
    assert env.verify(question).verdict == "refuted"


@pytest.mark.parametrize("verification", ["env", "off"])
@pytest.mark.parametrize("strategy", ["react", "try_again", "adapt"])
async def test_a_false_claim_after_a_wrong_answer_ends_failed(strategy: str,
                                                             verification: str) -> None:
    gold = PROBLEMS[0].answer
    turns = iter(range(1000))

    def wrong_then_claim(request: ChatRequest) -> str:
        return f"answer {gold + 1:g}" if next(turns) % 2 == 0 else DONE

    executor = FunctionModel(wrong_then_claim, "ex")
    planner = FunctionModel(lambda r: "Step 1: compute the total\nExecution Order: Step 1", "pl")
    config = RunConfig(strategy=strategy, d_max=2, verification=verification)
    result = await run_task(Calculator(), {"index": 0}, config, executor, planner,
                            sink=MemorySink())
    assert result.reward == 0.0
    assert result.status == "failed" and result.success is False
    assert result.verdict == "refuted"
    # off: the tree believed the claim, the final check overrules it; env: refuted on the way
    assert result.claimed_success is (verification == "off")

