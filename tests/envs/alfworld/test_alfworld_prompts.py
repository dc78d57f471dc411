"""The ALFWorld prompts: the executor's examples are real plays, the planner's plans parse."""

from __future__ import annotations

import re
import string

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine.planning.parse import parse_plan
from adapt.envs.alfworld import ALFWorld
from tests.envs.alfworld.prompt_examples import EXAMPLES, play


def test_every_executor_example_is_what_the_environment_says() -> None:
    text = ALFWorld().prompt_template("executor")
    env = ALFWorld()
    try:
        for example in EXAMPLES:
            block = play(example, env)
            assert block in text, f"the prompt drifted from the game: {example.config}"
    finally:
        env.close()
    assert text.count("Task completed!") >= 2 and "Task failed!" in text
    assert "Context from earlier sub-tasks:" in text and "Nothing happens." in text
    assert text.endswith("\n\n$task\n$context\n")


def test_planner_examples_parse_and_search_with_or() -> None:
    text = ALFWorld().prompt_template("planner")
    assert string.Template(text).get_identifiers() == ["task", "context"]
    blocks = re.split(r"\n\n(?=You are in the middle of a room)", text)[1:]
    assert len(blocks) == 5
    for block in blocks:
        plan = parse_plan(block)
        assert plan.steps and not plan.warnings, block[-300:]
    assert "Step 1 OR Step 2" in text and text.endswith("\n\n$task\n$context\n")


def test_plan_and_execute_has_its_own_template_with_the_planners_examples() -> None:
    env = ALFWorld()
    text, planner = env.prompt_template("plan_and_execute"), env.prompt_template("planner")
    assert string.Template(text).get_identifiers() == ["task", "context"]
    assert "exactly once, without any further planning" in text
    # the same format and examples as the ADaPT planner: one detailed plan, run once
    assert text.split("\n", 1)[1] == planner.split("\n", 1)[1]
