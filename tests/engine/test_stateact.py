"""The StateAct executor: parsing, prompting, success/failure rules, ADaPT on the toy env."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors import make_executor
from adapt.engine.executors.react import ReActExecutor
from adapt.engine.executors.stateact import (
    DEFAULT_MAX_TOKENS,
    STOP,
    StateActExecutor,
    parse_output,
    render_step,
    step_format,
)
from adapt.engine.runtime import Run
from adapt.engine.tree import TaskResult
from adapt.errors import UserError
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

FIELDS = ("done so far",)


class StateToyEnv(ToyEnv):
    """The toy env with a declared state field and a ``stateact`` template."""

    state_fields: ClassVar[tuple[str, ...]] = FIELDS

    def prompt_template(self, kind: str) -> str:
        if kind == "stateact":
            return ("STATEACT [$state_fields]\n$step_format\nDEMO\ngoal: x\ndone so far: a\n"
                    "thought: t\naction: ok a\nobservation: Did a.\n\n$task\n$context\n")
        return super().prompt_template(kind)


@pytest.fixture
def senv() -> StateToyEnv:
    return StateToyEnv()


def step(action: str | None, thought: str = "go on", done: str = "nothing",
         goal: str = "do the thing") -> str:
    lines = [f"goal: {goal}", f"done so far: {done}", f"thought: {thought}"]
    if action is not None:
        lines.append(f"action: {action}")
    return "\n".join(lines)


async def run1(env: ToyEnv, replies: list[str], d_max: int = 1, **executor: Any
               ) -> tuple[TaskResult, MemorySink, ScriptedModel]:
    sink = MemorySink()
    model = ScriptedModel(replies)
    config = RunConfig(d_max=d_max, executor={"kind": "stateact", **executor})
    result = await run_task(env, {}, config, model, sink=sink)
    return result, sink, model


# -- parsing ---------------------------------------------------------------------------------
def test_parse_fields_state_and_thought() -> None:
    out = parse_output("goal: craft beehive\nCurrent Inventory: [oak planks] (4)\n"
                       "thought: I need honeycomb.\naction: get 3 honeycomb",
                       ("current inventory",))
    assert out.goal == "craft beehive" and out.thought == "I need honeycomb."
    assert out.state == {"current inventory": "[oak planks] (4)"}
    assert out.action == "get 3 honeycomb" and out.error is None and out.warnings == []
    assert out.extra() == {"goal": "craft beehive", "thought": "I need honeycomb.",
                           "state": {"current inventory": "[oak planks] (4)"}}


def test_the_last_action_line_wins() -> None:
    out = parse_output("thought: hmm\naction: ok a\naction: ok b\n")
    assert out.action == "ok b" and out.warnings == []


def test_missing_or_empty_action_is_an_error() -> None:
    assert parse_output("goal: g\nthought: t").error == "no 'action:' line in the model output"
    out = parse_output("goal: g\nthought: t\naction:   ")
    assert out.action is None and out.error == "the 'action:' line is empty"


def test_malformed_lines() -> None:
    raw = ("preamble text\n> goal: g\nthought: first\nsecond line\nnote: extra\n"
           "action: ok a\ntrailing junk\nobservation: Did a.\naction: ok z")
    out = parse_output(raw, FIELDS)
    assert out.goal == "g" and out.action == "ok a"  # the made-up observation ends the step
    assert out.thought == "first second line note: extra"
    assert out.state == {}
    text = " | ".join(out.warnings)
    assert "line 1: text outside a field" in text and "unknown field 'note'" in text
    assert "line 7: text outside a field" in text and "made-up observation" in text
    assert "extra" in out.extra()["thought"] and out.extra()["warnings"] == out.warnings


def test_key_like_text_inside_values_is_not_a_key() -> None:
    out = parse_output("action: craft 1 x using 2 minecraft:stick\nthought: see http://a:b")
    assert out.action == "craft 1 x using 2 minecraft:stick"
    assert out.thought == "see http://a:b"


def test_thought_actions_and_declarations() -> None:
    assert parse_output("thought: x\naction: think").is_thought
    assert parse_output("action: THINK: Task completed!").declaration is True
    assert parse_output("thought: nope, task FAILED!\naction: think").declaration is False
    assert parse_output("thought: t\naction: ok a").declaration is None


def test_render_step_uses_the_canonical_order_and_the_env_fields() -> None:
    out = parse_output("action: ok a\nthought: t\ndone so far: a\ngoal: g", FIELDS)
    assert render_step(out, "Did a.", FIELDS) == (
        "goal: g\ndone so far: a\nthought: t\naction: ok a\nobservation: Did a.\n")
    missing = parse_output("thought: t", FIELDS)
    assert render_step(missing, "Invalid", FIELDS) == "thought: t\nobservation: Invalid\n"
    assert step_format(FIELDS) == "goal: ...\ndone so far: ...\nthought: ...\naction: ..."


# -- prompting -------------------------------------------------------------------------------
async def test_prompt_has_few_shot_trajectory_state_fields_and_stop(senv: StateToyEnv) -> None:
    _, _, model = await run1(senv, [step("ok a"), step("bad", done="a"),
                                    step("think", "Task completed!", done="a")])
    first, last = model.requests[0], model.requests[-1]
    assert last.stop == [STOP] == ["\nobservation:"] and last.max_tokens == DEFAULT_MAX_TOKENS
    assert last.role == "executor"
    assert first.prompt is not None and last.prompt is not None
    assert first.prompt.startswith("STATEACT [done so far]\ngoal: ...\ndone so far: ...\n")
    assert "DEMO\n" in first.prompt and first.prompt.endswith("Goal: do the thing.\n\n")
    assert last.prompt.endswith(
        "Goal: do the thing.\n\n"
        "goal: do the thing\ndone so far: nothing\nthought: go on\naction: ok a\n"
        "observation: Did a.\n"
        "goal: do the thing\ndone so far: a\nthought: go on\naction: bad\n"
        "observation: Nothing happens.\n")


async def test_an_explicit_max_tokens_is_kept(senv: StateToyEnv) -> None:
    _, _, model = await run1(senv, [step("think", "Task completed!")], max_tokens=77)
    assert model.requests[0].max_tokens == 77


async def test_a_missing_template_is_a_clear_user_error(env: ToyEnv) -> None:
    with pytest.raises(UserError, match=r"'stateact' prompt template.*'toy'"):
        await run1(env, [step("ok a")])


def test_the_registry_makes_stateact_and_react(senv: StateToyEnv) -> None:
    model = ScriptedModel([])
    stateact = Run(senv, RunConfig(executor={"kind": "stateact"}), model)
    assert isinstance(make_executor(stateact, max_steps=3), StateActExecutor)
    assert make_executor(stateact, max_steps=3).max_steps == 3  # type: ignore[attr-defined]
    assert isinstance(make_executor(Run(senv, RunConfig(), model)), ReActExecutor)


# -- rules shared with ReAct -----------------------------------------------------------------
async def test_steps_record_action_observation_and_extra(senv: StateToyEnv) -> None:
    result, sink, _ = await run1(senv, [step("ok a"), step("think", "Task completed!",
                                                           done="a")])
    first, second = sink.steps[1]
    assert (first.kind, first.text, first.observation, first.error) == (
        "action", "ok a", "Did a.", None)
    assert first.extra == {"goal": "do the thing", "state": {"done so far": "nothing"},
                           "thought": "go on"}
    assert first.raw == step("ok a")
    assert (second.kind, second.text, second.observation) == (
        "thought", "think: Task completed!", "OK.")
    assert senv.actions == ["ok a"]
    assert sink.nodes[1].self_assessed is True and sink.nodes[1].termination == "completed"
    assert result.success


async def test_task_failed_thought_fails(senv: StateToyEnv) -> None:
    result, sink, _ = await run1(senv, [step("think", "This is hopeless. Task failed!")])
    assert sink.nodes[1].self_assessed is False and sink.nodes[1].termination == "failed"
    assert result.status == "failed"


async def test_a_declaring_step_still_takes_its_action(senv: StateToyEnv) -> None:
    _, sink, _ = await run1(senv, [step("ok a", "Doing the last bit. Task completed!")])
    assert senv.actions == ["ok a"] and sink.nodes[1].termination == "completed"
    _, sink, _ = await run1(senv, [step("win", "Task completed!")])
    assert sink.nodes[1].termination == "reward"  # the reward wins


async def test_declaration_without_action_line_is_not_an_error(senv: StateToyEnv) -> None:
    _, sink, _ = await run1(senv, [step(None, "All done. Task completed!")])
    only = sink.steps[1][0]
    assert only.error is None and only.observation == "OK." and only.kind == "thought"
    assert sink.nodes[1].termination == "completed"


async def test_reward_is_success(senv: StateToyEnv) -> None:
    result, sink, _ = await run1(senv, [step("win")])
    assert sink.nodes[1].termination == "reward" and sink.nodes[1].self_assessed is None
    assert result.success and result.reward == 1.0


async def test_missing_action_is_recorded_and_the_run_continues(senv: StateToyEnv) -> None:
    _, sink, model = await run1(senv, [step(None), step("ok a"), step("think",
                                                                     "Task completed!")])
    bad = sink.steps[1][0]
    assert bad.error == "no 'action:' line in the model output" and bad.text == ""
    assert bad.observation.startswith("Invalid step: no 'action:' line")
    assert "goal:, done so far:, thought: and action:" in bad.observation
    assert senv.actions == ["ok a"] and sink.nodes[1].success
    assert model.requests[1].prompt is not None
    assert model.requests[1].prompt.endswith("thought: go on\nobservation: " + bad.observation
                                             + "\n")


async def test_missing_actions_count_toward_patience(senv: StateToyEnv) -> None:
    replies = [step(None), "garbage", step("ok a"), step(None), step("bad"), step("think"),
               step("unused")]
    _, sink, model = await run1(senv, replies, patience=3, max_steps=20)
    assert len(model.requests) == 6 and sink.nodes[1].termination == "patience"
    assert [s.error is not None for s in sink.steps[1]] == [True, True, False, True, False, False]


async def test_max_steps(senv: StateToyEnv) -> None:
    _, sink, model = await run1(senv, [step(f"ok {i}") for i in range(4)], max_steps=4)
    assert len(model.requests) == 4 and sink.nodes[1].termination == "max_steps"


# -- strategies ------------------------------------------------------------------------------
PLAN = "Step 1: part one\nStep 2: part two\nExecution Order: (Step 1 AND Step 2)"


async def test_adapt_with_stateact_decomposes_on_the_toy_env(senv: StateToyEnv) -> None:
    replies = [
        step("think", "Too hard. Task failed!"),  # root executor
        PLAN,  # planner
        step("ok a", goal="part one"), step("think", "Task completed!", "a", "part one"),
        step("ok b", goal="part two", done="a"),
        step("think", "Task completed!", "a, b", "part two"),
    ]
    result, sink, model = await run1(senv, replies, d_max=2)
    assert result.success and result.nodes >= 3
    assert senv.actions == ["ok a", "ok b"]
    executor_prompts = [r.prompt or "" for r in model.requests if r.stop == [STOP]]
    assert len(executor_prompts) == 5
    assert "Goal: part two.\nDone: a\n" in executor_prompts[3]  # propagated context
    children = [n for n in sink.nodes.values() if n.parent_id == 1]
    assert [c.termination for c in children] == ["completed", "completed"]


async def test_baselines_use_stateact_too(senv: StateToyEnv) -> None:
    sink = MemorySink()
    model = ScriptedModel([step("think", "Task failed!"), step("win")])
    config = RunConfig(strategy="try_again", d_max=2, executor={"kind": "stateact"})
    out = await run_task(StateToyEnv(), {}, config, model, sink=sink)
    assert out.success and all(r.stop == [STOP] for r in model.requests)
