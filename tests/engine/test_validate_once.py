"""The environment config is validated once on its way to the episode: at the edge when the
caller validated it (``registry.validate_config``), else once in ``run_task``; trials start the
environment again from the validated config without validating it again."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, field_validator

from adapt.engine import RunConfig, run_task
from adapt.envs.base import BaseEnvironment, StepResult, start_episode, validate_config
from adapt.errors import InvalidConfig
from adapt.llm.testing import ScriptedModel

FAIL = "think: I cannot do this. Task failed!"


class CountedConfig(BaseModel):
    goal: str = "do the thing"
    prompts: str = "default"

    validations: ClassVar[int] = 0

    @field_validator("goal")
    @classmethod
    def _count(cls, value: str) -> str:
        CountedConfig.validations += 1
        if not value.strip():
            raise ValueError("the goal is empty")
        return value


class CountedEnv(BaseEnvironment):
    """Implements ``start``: ``reset(**config)`` comes from ``BaseEnvironment``."""

    name: ClassVar[str] = "counted"
    config_model: ClassVar[type[BaseModel]] = CountedConfig
    paper_profile: ClassVar[dict[str, dict[str, Any]]] = {
        "environment_config": {"prompts": "paper"}}

    def __init__(self) -> None:
        self.started: list[CountedConfig] = []

    @property
    def goal(self) -> str:
        return self.started[-1].goal

    def start(self, cfg: CountedConfig) -> str:
        self.started.append(cfg)
        return f"Goal: {cfg.goal}."

    def task_observation(self, goal: str) -> str:
        return f"Goal: {goal}."

    def step(self, action: str) -> StepResult:
        return StepResult("Nothing happens.")

    def prompt_template(self, kind: str) -> str:
        if kind not in ("executor", "planner"):
            raise KeyError(kind)
        return "$task\n$context\n"

    def close(self) -> None:
        return None


@pytest.fixture(autouse=True)
def _zero() -> None:
    CountedConfig.validations = 0


async def test_a_dict_is_validated_once_for_every_trial() -> None:
    env = CountedEnv()
    config = RunConfig(strategy="try_again", d_max=3)
    result = await run_task(env, {"goal": "g"}, config, ScriptedModel([FAIL] * 3))
    assert not result.success
    assert len(env.started) == 3  # three trials, three episodes
    assert CountedConfig.validations == 1
    assert all(cfg is env.started[0] for cfg in env.started)


async def test_a_model_validated_at_the_edge_is_not_validated_again() -> None:
    env = CountedEnv()
    validated = validate_config(env, {"goal": "g"})
    assert CountedConfig.validations == 1
    await run_task(env, validated, RunConfig(strategy="react", d_max=1), ScriptedModel([FAIL]))
    assert CountedConfig.validations == 1
    assert env.started == [validated]


async def test_the_profile_fills_what_the_edge_left_unset() -> None:
    env = CountedEnv()
    paper = RunConfig(strategy="react", d_max=1, profile="paper")
    await run_task(env, validate_config(env, {"goal": "g"}), paper, ScriptedModel([FAIL]))
    await run_task(env, validate_config(env, {"goal": "g", "prompts": "mine"}), paper,
                   ScriptedModel([FAIL]))
    await run_task(env, {"goal": "g"}, paper, ScriptedModel([FAIL]))
    assert [c.prompts for c in env.started] == ["paper", "mine", "paper"]
    assert CountedConfig.validations == 3


async def test_reset_still_validates_and_names_the_field() -> None:
    env = CountedEnv()
    assert env.reset(goal="g") == "Goal: g."
    with pytest.raises(InvalidConfig, match="counted: invalid environment_config: goal: "):
        env.reset(goal=" ")
    with pytest.raises(InvalidConfig, match="goal"):
        await run_task(env, {"goal": " "}, RunConfig(strategy="react"), ScriptedModel([]))
    assert start_episode(env, {"goal": "h"}) == "Goal: h."
