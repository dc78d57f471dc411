"""Baselines as published (scripted models, the real TextCraft): a trial succeeds by the
environment's reward, so a false "Task completed!" does not stop try_again or spare reflexion's
reflection; each trial records its reward and self-assessment; the result is the best trial."""

from __future__ import annotations

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel

GOAL = {"goal": "craft oak planks"}
FALSE_CLAIM = "think: I have the oak planks. Task completed!"
SOLVE = ["get 1 oak logs", "craft 4 oak planks using 1 oak logs"]


@pytest.mark.parametrize("profile", ["default", "paper"])
async def test_a_false_success_does_not_stop_try_again(profile: str) -> None:
    executor, sink = ScriptedModel([FALSE_CLAIM, *SOLVE]), MemorySink()
    result = await run_task(TextCraft(), GOAL, RunConfig(strategy="try_again", d_max=3,
                                                         profile=profile), executor, sink=sink)
    assert executor.remaining == 0
    assert result.success and result.reward == 1.0
    trials = [n for n in sink.nodes.values() if n.label]
    assert [n.label for n in trials] == ["trial 1", "trial 2"]
    first, second = trials
    assert first.self_assessed is True and first.reward == 0.0 and first.success is False
    assert second.reward == 1.0 and second.success is True
    assert sink.nodes[1].reward == 1.0  # the best trial


async def test_try_again_keeps_going_after_false_claims_and_reports_the_best_trial() -> None:
    executor, sink = ScriptedModel([FALSE_CLAIM] * 3), MemorySink()
    result = await run_task(TextCraft(), GOAL, RunConfig(strategy="try_again", d_max=3),
                            executor, sink=sink)
    assert executor.remaining == 0  # all three trials ran
    assert not sink.nodes[1].success and result.reward == 0.0
    assert [n.self_assessed for n in sink.nodes.values() if n.label] == [True, True, True]


async def test_reflexion_reflects_after_a_trial_without_reward() -> None:
    executor, planner, sink = ScriptedModel([FALSE_CLAIM, *SOLVE]), ScriptedModel(
        ["I claimed success without crafting; get the logs and craft first."]), MemorySink()
    result = await run_task(TextCraft(), GOAL, RunConfig(strategy="reflexion", d_max=3),
                            executor, planner, sink=sink)
    assert executor.remaining == 0 and planner.remaining == 0  # one reflection, after trial 1
    assert result.reward == 1.0
    first = next(n for n in sink.nodes.values() if n.label == "trial 1")
    assert first.self_assessed is True and first.reward == 0.0 and not first.success
    assert first.context_out is not None and "craft first" in first.context_out
    assert "craft first" in (executor.requests[1].prompt or "")
