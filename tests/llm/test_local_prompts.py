"""The TextCraft prompt set for small local models (``environment_config.prompts = "small"``)
and the bench's ``prompts`` option. No LLM needed."""

from __future__ import annotations

import json

import pytest

from adapt.engine.prompts import render
from adapt.envs.textcraft import TextCraft
from adapt.errors import InvalidConfig
from adapt.eval.textcraft import run_bench


def templates(prompts: str | None) -> dict[str, str]:
    env = TextCraft()
    config = {"goal": "craft crafting table"} | ({"prompts": prompts} if prompts else {})
    env.reset(**config)
    return {kind: env.prompt_template(kind)
            for kind in ("executor", "planner", "plan_and_execute", "reflection", "stateact")}


def test_default_prompts_are_unchanged_and_small_ones_are_shorter() -> None:
    default, explicit, small = templates(None), templates("default"), templates("small")
    assert default == explicit
    for kind in ("executor", "planner", "plan_and_execute"):
        assert small[kind] != default[kind]
        assert len(small[kind]) < len(default[kind]) / 2, kind
        assert "$task" in small[kind] and "$context" in small[kind]
    for kind in ("reflection", "stateact"):  # no small version: the default is used
        assert small[kind] == default[kind]


def test_small_executor_prompt_renders_one_action_per_line() -> None:
    env = TextCraft()
    task = env.reset(goal="craft crafting table", prompts="small")
    prompt = render(env, "executor", task=task, context=None)
    assert prompt.endswith("Goal: craft crafting table.\n\n")
    actions = [line for line in prompt.splitlines() if line.startswith(">")]
    assert actions and all(line.startswith(">  ") for line in actions)  # see docs/local-llm.md
    assert all("\n" not in a for a in actions)
    assert sum(a.endswith("think: Task completed!") for a in actions) >= 3


def test_small_planner_prompt_shows_the_plan_format() -> None:
    env = TextCraft()
    task = env.reset(goal="craft crafting table", prompts="small")
    prompt = render(env, "planner", task=task, context="Inventory: [oak planks] (4) ")
    assert prompt.endswith("Goal: craft crafting table.\nInventory: [oak planks] (4) \nPlan:\n")
    assert prompt.count("Execution Order: (Step 1 AND Step 2 AND Step 3)") == 2


def test_unknown_prompt_set_is_a_config_error() -> None:
    with pytest.raises(InvalidConfig, match="prompts"):
        TextCraft().reset(seed=3, prompts="tiny")


def test_bench_runs_with_the_small_prompts_and_says_so() -> None:
    small = run_bench(limit=2, strategies="react", d_max=1, models="sim:textcraft?capability=1",
                      prompts="small")
    assert small.prompts == "small"
    assert json.loads(small.to_json())["prompts"] == "small"
    default = run_bench(limit=2, strategies="react", d_max=1,
                        models="sim:textcraft?capability=1")
    assert "prompts" not in json.loads(default.to_json())  # reports as before
    with pytest.raises(InvalidConfig, match="unknown prompt set 'tiny'"):
        run_bench(limit=1, strategies="react", models="sim:textcraft", prompts="tiny")
