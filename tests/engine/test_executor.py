"""The ReAct executor: step counting, thoughts, patience, success and failure rules."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.base import parse_line
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv


async def run1(env: ToyEnv, replies: list[str], **executor: object):
    sink = MemorySink()
    model = ScriptedModel(replies)
    result = await run_task(env, {}, RunConfig(d_max=1, executor=executor), model, sink=sink)
    return result, sink, model


async def test_max_steps_20_means_exactly_20_calls(env: ToyEnv) -> None:
    _, sink, model = await run1(env, [f"ok {i}" for i in range(20)], max_steps=20)
    assert len(model.requests) == 20
    assert sink.nodes[1].termination == "max_steps" and sink.nodes[1].steps_count == 20
    assert [s.index for s in sink.steps[1]] == list(range(1, 21))


async def test_default_max_steps_comes_from_the_environment(env: ToyEnv) -> None:
    env.default_max_steps = 5  # type: ignore[misc]
    _, _, model = await run1(env, [f"ok {i}" for i in range(5)])
    assert len(model.requests) == 5


async def test_thoughts_get_ok_and_are_not_sent_to_the_env(env: ToyEnv) -> None:
    _, sink, _ = await run1(env, ["think: let me see", "ok a", "THINK: Task Completed!"])
    steps = sink.steps[1]
    assert [(s.kind, s.observation) for s in steps] == [
        ("thought", "OK."), ("action", "Did a."), ("thought", "OK.")
    ]
    assert env.actions == ["ok a"]
    assert sink.nodes[1].self_assessed is True and sink.nodes[1].success


async def test_task_failed_thought_fails(env: ToyEnv) -> None:
    result, sink, _ = await run1(env, ["think: this is hopeless, task FAILED!"])
    assert sink.nodes[1].self_assessed is False and sink.nodes[1].termination == "failed"
    assert result.status == "failed"


async def test_reward_is_success_without_a_thought(env: ToyEnv) -> None:
    result, sink, _ = await run1(env, ["win"])
    assert sink.nodes[1].termination == "reward" and sink.nodes[1].self_assessed is None
    assert result.success and result.reward == 1.0


async def test_patience_counts_consecutive_failures_and_ok(env: ToyEnv) -> None:
    replies = ["bad"] * 3 + ["think: hmm"] * 2 + ["bad"] * 3
    _, sink, model = await run1(env, replies, patience=8, max_steps=20)
    assert len(model.requests) == 8
    assert sink.nodes[1].termination == "patience"


async def test_a_good_observation_resets_patience(env: ToyEnv) -> None:
    replies = ["bad", "bad", "ok a", "bad", "bad", "bad"]
    _, sink, model = await run1(env, replies, patience=3, max_steps=6)
    assert len(model.requests) == 6 and sink.nodes[1].termination == "patience"


async def test_self_assessed_and_reward_are_both_recorded(env: ToyEnv) -> None:
    # A false claim of success: self-assessed True, reward 0.
    result, sink, _ = await run1(env, ["think: Task completed!"])
    assert sink.nodes[1].self_assessed is True and sink.nodes[1].reward == 0.0
    assert result.success and result.reward == 0.0


async def test_prompt_has_trajectory_and_stop_at_newline(env: ToyEnv) -> None:
    _, _, model = await run1(env, ["ok a", "bad", "think: Task completed!"])
    last = model.requests[-1]
    assert last.stop == ["\n"]
    assert last.prompt is not None
    assert last.prompt.endswith("Goal: do the thing.\n\n> ok a\nDid a.\n> bad\nNothing happens.\n> ")


async def test_only_the_first_line_of_the_output_is_used(env: ToyEnv) -> None:
    _, sink, _ = await run1(env, ["\n> ok a\nok b", "think: task completed"])
    assert env.actions == ["ok a"]
    assert sink.steps[1][0].raw == "\n> ok a\nok b" and sink.steps[1][0].text == "ok a"


def test_parse_line() -> None:
    assert parse_line("  get 1 stick  ") == "get 1 stick"
    assert parse_line("> craft x\nmore") == "craft x"
    assert parse_line("") == ""
