"""Profiles: ``paper`` sets the published settings per environment; explicit settings win;
applying twice changes nothing; the result names the profile (scripted models, real TextCraft)."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.profiles import profile_settings
from adapt.engine.resolve import resolve_config
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel

GOAL = {"goal": "craft oak planks"}


def test_default_changes_nothing() -> None:
    config = RunConfig()
    resolved, env_config = resolve_config(config, TextCraft, {"seed": 1})
    assert resolved.model_dump() == {**config.model_dump(), "models": None}
    assert env_config == {"seed": 1}
    assert profile_settings("default", TextCraft) == {}


def test_paper_fills_in_what_was_not_set_and_is_idempotent() -> None:
    config = RunConfig.model_validate({"profile": "paper", "executor": {"max_steps": 7}})
    out, env_config = resolve_config(config, TextCraft, {"seed": 1})
    assert out.profile == "paper" and not out.monitor.enabled
    assert out.executor.max_steps == 7  # explicit wins
    assert (out.executor.patience, out.executor.max_tokens) == (8, 150)
    assert out.executor.self_assessment == "any_line"
    assert (out.planner.max_tokens, out.planner.stop, out.planner.propagate_context) == (
        800, [], False)
    assert env_config == {"prompts": "paper", "seed": 1}
    assert resolve_config(out, TextCraft, env_config) == (out, env_config)
    _, env_config = resolve_config(config, TextCraft, {"seed": 1, "prompts": "small"})
    assert env_config["prompts"] == "small"


async def test_a_paper_run_uses_the_paper_prompts_and_limits() -> None:
    model = ScriptedModel(["get 1 oak logs", "craft 4 oak planks using 1 oak logs"])
    sink = MemorySink()
    result = await run_task(TextCraft(), GOAL, RunConfig(profile="paper", strategy="react",
                                                         d_max=1), model, sink=sink)
    assert result.profile == "paper" and result.reward == 1.0
    first = model.requests[0]
    assert "These examples show how to fetch and how to craft items." in (first.prompt or "")
    assert first.max_tokens == 150
    default = ScriptedModel(["get 1 oak logs", "craft 4 oak planks using 1 oak logs"])
    result = await run_task(TextCraft(), GOAL, RunConfig(strategy="react", d_max=1), default)
    assert result.profile == "default"
    assert "These examples show" not in (default.requests[0].prompt or "")


async def test_paper_self_assessment_reads_action_lines_too() -> None:
    """The ADaPT TextCraft code ends a run on 'task completed' in any line; the default only in
    a thought."""
    line = "get 1 oak logs. Task completed!"
    paper, sink = ScriptedModel([line]), MemorySink()
    await run_task(TextCraft(), GOAL, RunConfig(profile="paper", d_max=1), paper, sink=sink)
    root = sink.nodes[1]
    assert root.self_assessed is True and root.termination == "completed"
    default, sink = ScriptedModel([line, "think: I cannot. Task failed!"]), MemorySink()
    await run_task(TextCraft(), GOAL, RunConfig(d_max=1), default, sink=sink)
    assert sink.nodes[1].self_assessed is False and default.remaining == 0
