"""A run's configuration is resolved once (``resolve_config``) into a frozen ``ResolvedConfig``
that the engine runs as it is; the executor's section is the config model of its kind
(issue 35, item 3)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import pytest
from pydantic import Field, ValidationError

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.budget import Budget
from adapt.engine.config import ExecutorConfig, ModelSpecs, ResolvedConfig, config_as
from adapt.engine.executors.react import ReActConfig, ReActExecutor
from adapt.engine.executors.registry import EXECUTORS, register_executor
from adapt.engine.executors.spec_agent.config import SpecConfig
from adapt.engine.executors.stateact import StateActConfig
from adapt.engine.resolve import BudgetLimits, resolve_config
from adapt.engine.runtime import Run
from adapt.envs.textcraft import TextCraft
from adapt.errors import OverLimit
from adapt.llm.testing import ScriptedModel
from tests.support.stored_configs import OLD_ROW

GOAL = {"goal": "craft oak planks"}
SOLVE = ["get 1 oak logs", "craft 4 oak planks using 1 oak logs"]


def test_a_resolved_config_is_frozen_all_the_way_down() -> None:
    config, _ = resolve_config(RunConfig(), TextCraft)
    for target, field, value in [(config, "d_max", 2), (config.executor, "max_steps", 3),
                                 (config.planner, "max_tokens", 9), (config.budget,
                                                                     "max_tokens", 1),
                                 (config.monitor, "enabled", False)]:
        with pytest.raises(ValidationError, match="frozen"):
            setattr(target, field, value)


async def test_run_task_takes_a_resolved_config_as_it_is() -> None:
    """A resolved config whose fields the paper profile would fill (were it applied again) runs
    with its own values: d_max 3 and 128 tokens, not TextCraft's paper 4 and 150."""
    config = ResolvedConfig.model_validate({"profile": "paper", "strategy": "react"})
    model, sink = ScriptedModel(SOLVE), MemorySink()
    result = await run_task(TextCraft(), GOAL, config, model, sink=sink)
    assert (result.profile, result.d_max) == ("paper", 3)
    assert model.requests[0].max_tokens == 128
    assert "These examples show" not in (model.requests[0].prompt or "")  # no paper prompts
    # the same request as a RunConfig is resolved first: the profile fills it in
    model = ScriptedModel(SOLVE)
    result = await run_task(TextCraft(), GOAL, RunConfig(profile="paper", strategy="react"),
                            model)
    assert result.d_max == 4 and model.requests[0].max_tokens == 150


async def test_a_stateact_config_runs_the_same_after_a_round_trip_through_json() -> None:
    """StateAct's own default (384 tokens a step) is the config's, not a guess from which
    fields were set: the stored config (the service's) runs as the resolved one did."""
    resolved, _ = resolve_config(RunConfig(executor={"kind": "stateact"}), TextCraft)
    stored = ResolvedConfig.model_validate(resolved.model_dump(mode="json"))
    sent = []
    for config in (RunConfig(executor={"kind": "stateact"}), resolved, stored):
        model = ScriptedModel(["thought: get the logs\naction: get 1 oak logs",
                               "thought: craft\naction: craft 4 oak planks using 1 oak logs"])
        await run_task(TextCraft(), GOAL, config, model)
        sent.append(model.requests[0].max_tokens)
    assert sent == [384, 384, 384]


def test_the_executor_section_is_its_kinds_model() -> None:
    assert type(RunConfig().executor) is ReActConfig
    assert type(RunConfig(executor={"kind": "stateact"}).executor) is StateActConfig
    assert type(RunConfig(executor={"kind": "spec", "spec": "pass"}).executor) is SpecConfig
    assert type(RunConfig(executor={"kind": "stateflow"}).executor) is ExecutorConfig
    with pytest.raises(ValidationError) as info:  # act_only is ReAct's, not StateAct's
        RunConfig(executor={"kind": "stateact", "act_only": True})
    assert info.value.errors()[0]["loc"] == ("executor", "act_only")
    with pytest.raises(ValidationError, match="unknown executor kind 'nope'"):
        RunConfig(executor={"kind": "nope"})


class DepthConfig(ExecutorConfig):
    """A plug-in executor's own settings."""

    lookahead: int = Field(default=1, ge=1, le=5)


class LookaheadExecutor(ReActExecutor):
    config_model: ClassVar[type[ExecutorConfig]] = DepthConfig
    seen: ClassVar[list[int]] = []

    def __init__(self, run: Run, *, max_steps: int | None = None) -> None:
        LookaheadExecutor.seen.append(config_as(run.config.executor, DepthConfig).lookahead)
        super().__init__(run, max_steps=max_steps)


@pytest.fixture
def lookahead() -> Iterator[str]:
    register_executor("lookahead", LookaheadExecutor)
    yield "lookahead"
    EXECUTORS.refresh()


async def test_a_plugin_executor_brings_its_config_model(lookahead: str) -> None:
    config = RunConfig(d_max=1, executor={"kind": lookahead, "lookahead": 3})
    assert isinstance(config.executor, DepthConfig)
    with pytest.raises(ValidationError, match="less than or equal to 5"):
        RunConfig(executor={"kind": lookahead, "lookahead": 9})
    LookaheadExecutor.seen.clear()
    await run_task(TextCraft(), GOAL, config, ScriptedModel(SOLVE))
    assert LookaheadExecutor.seen == [3]


def test_the_profile_fills_only_what_the_kind_takes() -> None:
    """TextCraft's paper executor settings include self_assessment, which the spec agents do
    not take: a spec executor gets the rest."""
    config, _ = resolve_config(RunConfig(profile="paper", executor={"kind": "spec"}), TextCraft)
    assert isinstance(config.executor, SpecConfig)
    assert (config.executor.max_steps, config.executor.max_tokens) == (20, 150)


def test_the_operators_budget_limits() -> None:
    limits = BudgetLimits(default=Budget(max_llm_calls=200, max_nodes=500),
                          maximum=Budget(max_llm_calls=1000, max_nodes=100))
    asked = RunConfig.model_validate({"budget": {"max_tokens": 5000}})
    config, _ = resolve_config(asked, TextCraft, limits=limits)
    # the default where unset; a default over the maximum is the maximum; the asked kept
    assert (config.budget.max_llm_calls, config.budget.max_nodes,
            config.budget.max_tokens) == (200, 100, 5000)
    with pytest.raises(OverLimit) as info:
        resolve_config(RunConfig.model_validate({"budget": {"max_llm_calls": 1001}}),
                       TextCraft, limits=limits)
    assert (info.value.field, info.value.value, info.value.limit) == (
        "budget.max_llm_calls", 1001, 1000)


def test_the_models_are_named_in_the_resolved_config() -> None:
    models = ModelSpecs(executor=("sim:a", "sim:b"), planner="sim:a")
    config, _ = resolve_config(RunConfig(), TextCraft, models=models)
    assert config.models == models and config.models.cascade
    assert resolve_config(config, TextCraft)[0] is config  # resolved: taken as it is


def test_a_row_stored_before_configs_were_resolved_still_loads() -> None:
    config = ResolvedConfig.from_stored(OLD_ROW, executor_model="sim:weak",
                                        planner_model="sim:planner")
    assert isinstance(config.executor, StateActConfig)
    assert config.executor.max_tokens == 128  # what the row ran with, not StateAct's default
    assert config.models == ModelSpecs(executor=("sim:weak", "sim:strong"),
                                       planner="sim:planner")
    single = {**OLD_ROW, "executor": {**OLD_ROW["executor"], "models": []}}
    config = ResolvedConfig.from_stored(single, executor_model="sim:x", planner_model="sim:x")
    assert config.models == ModelSpecs(executor=("sim:x",), planner="sim:x")
    # and a resolved config read back is the same config
    again = ResolvedConfig.from_stored(config.model_dump(mode="json"), executor_model="-",
                                       planner_model="-")
    assert again == config
