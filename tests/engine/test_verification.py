"""Verification in the controller: refute, confirm early, skip what is already satisfied,
unknown keeps the claim, evidence fed back; the status rule for every strategy; grammars and
act-only requests."""

from __future__ import annotations

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.claim_checks import FEEDBACK
from adapt.engine.resolve import resolve_config
from adapt.envs.textcraft import TextCraft
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel, ScriptedModel

BEEHIVE = {"goal": "craft beehive", "commands": [
    "craft 1 beehive using 6 planks, 3 honeycomb",
    "craft 4 oak planks using 1 oak logs",
    "craft 4 stick using 2 planks",
]}
CRAFT = "craft 1 beehive using 6 oak planks, 3 honeycomb"


def by_goal(sink: MemorySink, goal: str) -> object:
    return next(n for n in sink.nodes.values() if n.goal == goal)


async def test_refute_skip_confirm_and_feedback() -> None:
    executor = ScriptedModel([
        # root: a false claim, refuted by the environment
        "get 3 honeycomb", "think: Task completed!",
        # "fetch 3 honeycomb" is already held: skipped, no call
        # "fetch 6 oak planks": 4 made, a false claim, refuted -> decomposed
        "get 1 oak logs", "craft 4 oak planks using 1 oak logs", "think: Task completed!",
        # its sub-step "craft 4 oak planks": confirmed after the craft, ends without a claim
        "get 1 oak logs", "craft 4 oak planks using 1 oak logs",
        # the final craft earns the reward
        CRAFT,
    ])
    planner = ScriptedModel([
        "Step 1: fetch 3 honeycomb\nStep 2: fetch 6 oak planks\nStep 3: " + CRAFT
        + "\nExecution Order: (Step 1 AND Step 2 AND Step 3)",
        "Step 1: craft 4 oak planks using 1 oak logs\nExecution Order: (Step 1)",
    ])
    sink = MemorySink()
    result = await run_task(TextCraft(), BEEHIVE, RunConfig(d_max=3), executor, planner,
                            sink=sink)
    assert executor.remaining == 0 and planner.remaining == 0
    assert result.status == "succeeded" and result.reward == 1.0 and result.verdict == "confirmed"

    root = sink.nodes[1]
    assert (root.claim, root.termination) == (True, "refuted")  # the executor's run: refuted
    refutation = "the goal item has not been crafted (reward 0)"
    # the refutation's evidence reaches the planner's next attempt
    assert FEEDBACK.format(evidence=refutation) in planner.requests[0].as_prompt()
    # once the children ran, the environment's final word on the root's goal
    assert root.verdict == "confirmed" and root.evidence == "the goal item was crafted (reward 1)"

    honey = by_goal(sink, "fetch 3 honeycomb")
    assert honey.status == "succeeded" and honey.steps_count == 0  # type: ignore[attr-defined]
    assert (honey.claim, honey.verdict, honey.termination) == (  # type: ignore[attr-defined]
        None, "confirmed", "verified")
    assert honey.evidence == "holds 3 of 3 honeycomb"  # type: ignore[attr-defined]

    planks = by_goal(sink, "fetch 6 oak planks")
    assert planks.claim is True and planks.termination == "refuted"  # type: ignore[attr-defined]
    assert "holds 4 of 6 oak planks" in planner.requests[1].as_prompt()
    # after its child: the environment confirms the goal
    assert planks.success is True and planks.verdict == "confirmed"  # type: ignore[attr-defined]
    assert planks.evidence == "holds 8 of 6 oak planks"  # type: ignore[attr-defined]

    more = by_goal(sink, "craft 4 oak planks using 1 oak logs")
    assert (more.claim, more.verdict, more.termination) == (  # type: ignore[attr-defined]
        None, "confirmed", "verified")
    assert more.steps_count == 2  # type: ignore[attr-defined]
    assert result.checked_subgoals == 4 and result.checkable_subgoals == 4


async def test_unknown_keeps_the_claim() -> None:
    executor = ScriptedModel(["think: Too hard. Task failed!",
                              "get 3 honeycomb", "think: Task completed!",
                              "get 1 oak logs", "craft 4 oak planks using 1 oak logs",
                              "get 1 oak logs", "craft 4 oak planks using 1 oak logs", CRAFT])
    planner = ScriptedModel(["Step 1: prepare the honey\nStep 2: " + CRAFT
                             + "\nExecution Order: (Step 1 AND Step 2)"])
    sink = MemorySink()
    result = await run_task(TextCraft(), BEEHIVE, RunConfig(d_max=2), executor, planner,
                            sink=sink)
    honey = by_goal(sink, "prepare the honey")
    assert (honey.claim, honey.verdict, honey.termination) == (  # type: ignore[attr-defined]
        True, "unknown", "completed")
    assert honey.success is True  # type: ignore[attr-defined]
    assert result.success and result.checked_subgoals == 2 and result.checkable_subgoals == 1


async def test_verification_off_records_only_the_claim() -> None:
    executor = ScriptedModel(["get 3 honeycomb", "think: Task completed!"])
    sink = MemorySink()
    await run_task(TextCraft(), BEEHIVE, RunConfig(verification="off"), executor, sink=sink)
    root = sink.nodes[1]
    assert root.claim is True and root.termination == "completed"


def always_claims(request: ChatRequest) -> str:
    return "think: Task completed!" if request.role == "executor" else (
        "Step 1: " + CRAFT + "\nExecution Order: (Step 1)")


@pytest.mark.parametrize("strategy", ["adapt", "react", "plan_and_execute", "try_again",
                                      "reflexion", "stateflow"])
@pytest.mark.parametrize("verification", ["env", "off"])
async def test_no_strategy_reports_success_the_environment_refutes(strategy: str,
                                                                   verification: str) -> None:
    model = FunctionModel(always_claims)
    sink = MemorySink()
    config = RunConfig(strategy=strategy, d_max=2, verification=verification)
    result = await run_task(TextCraft(), BEEHIVE, config, model, sink=sink)
    assert result.status == "failed" and not result.success and result.reward == 0.0
    assert result.verdict == "refuted" and sink.nodes[1].success is False
    assert sink.nodes[1].verdict == "refuted"


def test_every_built_in_strategy_is_in_the_status_rule_test() -> None:
    from adapt.engine.strategies.registry import BUILTINS

    checked = test_no_strategy_reports_success_the_environment_refutes.pytestmark  # type: ignore[attr-defined]
    listed = next(m.args[1] for m in checked if m.args[0] == "strategy")
    assert set(BUILTINS) <= set(listed)


@pytest.mark.parametrize("strategy", ["try_again", "reflexion"])
async def test_each_trial_is_verified_a_refuted_trial_does_not_end_the_trials(
        strategy: str) -> None:
    model = FunctionModel(always_claims)
    sink = MemorySink()
    result = await run_task(TextCraft(), BEEHIVE, RunConfig(strategy=strategy, d_max=3), model,
                            sink=sink)
    trials = [n for n in sink.nodes.values() if n.label and n.label.startswith("trial")]
    assert [n.label for n in trials] == ["trial 1", "trial 2", "trial 3"]
    for trial in trials:  # every trial: the claim, the environment's word, the outcome
        assert (trial.claim, trial.verdict, trial.termination) == (True, "refuted", "refuted")
        assert trial.evidence == "the goal item has not been crafted (reward 0)"
        assert trial.status == "failed" and trial.success is False
    assert result.status == "failed" and result.claimed_success is False


@pytest.mark.parametrize("strategy", ["try_again", "reflexion"])
async def test_a_trial_that_crafts_the_goal_is_confirmed_and_ends_the_trials(
        strategy: str) -> None:
    # trial 1 claims falsely; trial 2 crafts the goal item
    replies = iter(["think: Task completed!", "Reflection: craft it.", "get 3 honeycomb",
                    "get 1 oak logs", "get 1 oak logs", "craft 4 oak planks using 1 oak logs",
                    "craft 4 oak planks using 1 oak logs", CRAFT])

    def script(request: ChatRequest) -> str:
        reply = next(replies)
        if request.role == "reflection" and not reply.startswith("Reflection"):
            raise AssertionError(f"the reflection got {reply!r}")
        if request.role == "executor" and reply.startswith("Reflection"):
            return next(replies)
        return reply.removeprefix("Reflection: ")

    sink = MemorySink()
    result = await run_task(TextCraft(), BEEHIVE, RunConfig(strategy=strategy, d_max=3),
                            FunctionModel(script), sink=sink)
    trials = sorted((n for n in sink.nodes.values() if n.label), key=lambda n: n.id)
    assert [(n.label, n.verdict, n.status) for n in trials] == [
        ("trial 1", "refuted", "failed"), ("trial 2", "confirmed", "succeeded")]
    assert result.status == "succeeded" and result.verdict == "confirmed"


def test_paper_profile_turns_verification_off_unless_set() -> None:
    config, _ = resolve_config(RunConfig(profile="paper"), TextCraft)
    assert config.verification == "off"
    config, _ = resolve_config(RunConfig(profile="paper", verification="env"), TextCraft)
    assert config.verification == "env"
    config, _ = resolve_config(RunConfig(), TextCraft)
    assert config.verification == "env"


async def test_grammars_and_act_only_go_into_the_requests() -> None:
    executor = ScriptedModel(["think: Task completed!", "get 1 oak logs",
                              "craft 4 oak planks using 1 oak logs"])
    env = TextCraft()
    config = RunConfig(strategy="react", grammar=True, executor={"act_only": True})
    sink = MemorySink()
    result = await run_task(env, {"goal": "craft oak planks"}, config, executor, sink=sink)
    assert result.success and result.reward == 1.0  # the "claim" was not one: act-only
    assert executor.requests[0].grammar == env.decoding_grammar("action")
    assert "think" not in (executor.requests[0].grammar or "")
    planner = ScriptedModel(["Step 1: fetch 1 oak logs\nExecution Order: (Step 1)"])
    executor = ScriptedModel(["think: no. Task failed!", "get 1 oak logs", "inventory",
                              "think: Task failed!", "think: Task failed!"])
    await run_task(env, {"goal": "craft oak planks"}, RunConfig(grammar=True, d_max=2),
                   executor, planner)
    assert planner.requests[0].grammar == env.decoding_grammar("plan")
    assert executor.requests[0].grammar == env.decoding_grammar("react")
    plain = ScriptedModel(["think: Task failed!"])
    await run_task(env, {"goal": "craft oak planks"}, RunConfig(d_max=1), plain)
    assert plain.requests[0].grammar is None


async def test_cli_tree_view_shows_claim_vs_verdict() -> None:
    from rich.console import Console

    from adapt.cli.liveview import render_summary, render_tree

    executor = ScriptedModel(["get 3 honeycomb", "think: Task completed!"])
    sink = MemorySink()
    config = RunConfig(d_max=1, verification="off")  # the final check still refutes it
    result = await run_task(TextCraft(), BEEHIVE, config, executor, sink=sink)
    console = Console(record=True, width=200)
    console.print(render_tree(sink))
    console.print(render_summary(result, {"executor": "scripted"}))
    text = console.export_text()
    assert ("[claim: success, env: refuted (the goal item has not been crafted (reward 0))]"
            in text)
    assert "success claimed, environment: refuted" in text


async def test_a_retry_of_a_refuted_goal_hears_the_evidence() -> None:
    executor = ScriptedModel(["get 3 honeycomb", "think: Task completed!",
                              "think: Task failed!"])
    planner = ScriptedModel(["Step 1: craft beehive\nExecution Order: (Step 1)"])
    sink = MemorySink()
    await run_task(TextCraft(), BEEHIVE, RunConfig(d_max=2), executor, planner, sink=sink)
    note = FEEDBACK.format(evidence="the goal item has not been crafted (reward 0)")
    assert note not in (executor.requests[0].prompt or "")
    assert note in (executor.requests[2].prompt or "")  # the child with the same goal
    assert note in (sink.nodes[2].context_in or "")
