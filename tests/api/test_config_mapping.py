"""The API's run configuration is mapped from the engine's, not inherited or copied (issue 35,
item 3): each field takes the engine's definition by name, an engine field the API does not
map is not part of it, and the request and the stored configs (old rows too) read as before."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel, Field

import api.schemas
from adapt.engine import budget as engine_budget
from adapt.engine import config as engine_config
from adapt.engine.approvals import ApprovalConfig as EngineApproval
from adapt.engine.budget import Budget as EngineBudget
from adapt.engine.config import ModelSpecs, RunConfig
from adapt.engine.executors.react import ReActConfig
from adapt.engine.executors.spec_agent.config import SpecConfig
from adapt.engine.executors.stateact import StateActConfig
from adapt.engine.resolve import resolve_config
from adapt.envs.textcraft import TextCraft
from adapt.service.submit import request_hash
from api.schemas import run_config as mapped
from api.schemas.tasks import TaskCreate, TaskDetail
from tests.support.stored_configs import OLD_ROW

#: where each API model's fields come from, and the fields that are the API's own
SOURCES: dict[type[BaseModel], tuple[list[type[BaseModel]], set[str]]] = {
    mapped.ExecutorConfig: ([engine_config.ExecutorConfig, ReActConfig, StateActConfig,
                             SpecConfig], {"models"}),
    mapped.PlannerConfig: ([engine_config.PlannerConfig], set()),
    mapped.MonitorConfig: ([engine_config.MonitorConfig], set()),
    mapped.Budget: ([EngineBudget], set()),
    mapped.ApprovalConfig: ([EngineApproval], set()),
    mapped.ReuseConfig: ([engine_config.ReuseConfig], set()),
    mapped.RunConfig: ([RunConfig], {"executor", "planner", "budget"}),
}


def engine_field(sources: list[type[BaseModel]], name: str) -> Any:
    for source in sources:
        if name in source.model_fields:
            return source.model_fields[name]
    raise AssertionError(f"{name} is in no engine model")


@pytest.mark.parametrize("model", list(SOURCES), ids=lambda m: m.__name__)
def test_every_mapped_field_is_the_engines_definition(model: type[BaseModel]) -> None:
    sources, own = SOURCES[model]
    for name, info in model.model_fields.items():
        if name in own:
            continue
        theirs = engine_field(sources, name)
        assert info.description == theirs.description, name
        assert info.metadata == theirs.metadata, name
        if info.annotation in SOURCES:  # a section: the API's model of the engine's section
            assert theirs.annotation in SOURCES[info.annotation][0], name
            continue
        assert info.annotation == theirs.annotation, name
        assert (info.default, info.default_factory) == (
            theirs.default, theirs.default_factory), name


def test_the_api_inherits_no_engine_model() -> None:
    """An engine change cannot change the API through a base class."""
    for name, obj in vars(api.schemas).items():
        if inspect.isclass(obj) and issubclass(obj, BaseModel):
            engine_bases = [c for c in obj.__mro__[1:]
                            if c.__module__ in ("adapt.engine.config", "adapt.engine.budget")]
            assert engine_bases == [], name


def fresh_schemas() -> ModuleType:
    """``api/schemas/run_config.py`` executed again (the engine as it is now), apart from
    the module the app uses."""
    path = Path(mapped.__file__)
    spec = importlib.util.spec_from_file_location("fresh_run_config_schemas", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_a_new_engine_field_is_not_in_the_api_until_mapped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class GrownBudget(EngineBudget):
        max_gpu_seconds: float | None = Field(default=None, gt=0)

    class GrownExecutor(engine_config.ExecutorConfig):
        tool_choice: str = "auto"

    monkeypatch.setattr(engine_budget, "Budget", GrownBudget)
    monkeypatch.setattr(engine_config, "ExecutorConfig", GrownExecutor)
    schemas = fresh_schemas()
    assert schemas.EngineBudget is GrownBudget and schemas.Executor is GrownExecutor
    for model in (schemas.Budget, schemas.BudgetCreate):
        assert set(model.model_fields) == set(EngineBudget.model_fields)
    for model in (schemas.ExecutorConfig, schemas.ExecutorCreate):
        assert "tool_choice" not in model.model_fields
    # and a stored config that holds them shows only what the API maps
    stored = {**OLD_ROW, "budget": {**OLD_ROW["budget"], "max_gpu_seconds": 5.0},
              "executor": {**OLD_ROW["executor"], "tool_choice": "auto"}}
    shown = mapped.RunConfig.model_validate(mapped.shown(stored)).model_dump()
    assert "max_gpu_seconds" not in shown["budget"] and "tool_choice" not in shown["executor"]


def public(stored: dict[str, Any]) -> dict[str, Any]:
    return mapped.RunConfig.model_validate(mapped.shown(stored)).model_dump(mode="json")


def test_a_row_of_before_and_a_resolved_row_show_the_same_run_config() -> None:
    """The stored shape changed (the models are a section; the executor holds its kind's
    fields); what GET /tasks/{id} shows of it did not."""
    request = RunConfig.model_validate({k: v for k, v in OLD_ROW.items() if k != "executor"}
                                       | {"executor": {"kind": "stateact", "max_tokens": 128}})
    resolved, _ = resolve_config(request, TextCraft, models=ModelSpecs(
        executor=("sim:weak", "sim:strong"), planner="sim:weak"))
    stored = resolved.model_dump(mode="json")
    assert "models" in stored and "models" not in stored["executor"]
    assert "act_only" not in stored["executor"]  # a ReAct field: not the StateAct config's
    assert public(stored) == public(OLD_ROW)
    assert public(stored)["executor"]["models"] == ["sim:weak", "sim:strong"]
    one = resolved.model_copy(update={"models": ModelSpecs(executor=("sim:weak",),
                                                           planner="sim:weak")})
    assert public(one.model_dump(mode="json"))["executor"]["models"] == []
    # the task's detail reads the stored config through the same mapping
    assert TaskDetail.model_fields["run_config"].annotation is mapped.RunConfig


#: requests and the SHA-256 of their canonical dump (what an Idempotency-Key compares: the
#: fields set that differ from their defaults), recorded in 0.2.0: a request reads exactly as
#: it did, and a field added later with its default changes no hash
REQUESTS: list[tuple[dict[str, Any], str]] = [
    ({"environment": "textcraft"},
     "d5b5a33b550e785a5ceacbd975d998a3a1dce6ecd2f60f358706c54a43823f5a"),
    ({"environment": "textcraft", "environment_config": {"seed": 3}, "d_max": 4,
      "profile": "paper", "executor": {"model": "sim:textcraft?capability=1", "max_steps": 20,
                                       "kind": "stateact", "repeat_limit": 5},
      "planner": {"model": "sim:textcraft", "stop": ["\n\n"]}, "budget": {"max_llm_calls": 10},
      "monitor": {"enabled": False}, "verification": "off", "seed": 7},
     "3426befaf2a15ff04a6e332c16cdf3bf28f31e4c5ddefe766ccd6ca5aae7ec7a"),
    ({"environment": "textcraft", "executor": {"models": ["sim:a", "sim:b"], "cascade": "after",
                                               "kind": "spec", "spec": "pass",
                                               "pass_output": "raw"},
      "webhook": {"url": "https://example.com/hook"}},
     "61b7a4256e5da1b8810c5e0e9f5dfa59e3de1fdb899b72ce75454e27a7fcbaef"),
]


@pytest.mark.parametrize(("body", "digest"), REQUESTS)
def test_a_request_reads_as_before(body: dict[str, Any], digest: str) -> None:
    assert request_hash(compared(body)) == digest


def compared(body: dict[str, Any]) -> dict[str, Any]:
    """What POST /tasks hashes of a request (api/routes/tasks.py)."""
    return TaskCreate.model_validate(body).model_dump(mode="json", exclude_defaults=True)


def test_a_default_sent_or_left_out_is_the_same_request() -> None:
    bare = {"environment": "textcraft"}
    spelled = {"environment": "textcraft", "strategy": "adapt", "executor": {"kind": "react"},
               "budget": {}}
    assert request_hash(compared(bare)) == request_hash(compared(spelled))
    assert request_hash(compared(bare)) != request_hash(compared({**bare, "d_max": 2}))


def test_the_flat_executor_section_maps_to_its_kinds_model() -> None:
    """A request may hold every kind's fields (as it always could); the engine's config is
    the kind's model with the fields that kind takes."""
    body = TaskCreate.model_validate({"environment": "textcraft", "executor": {
        "kind": "stateact", "repeat_limit": 5, "act_only": True, "spec": "pass",
        "model": "sim:textcraft"}})
    executor = body.run_config().executor
    assert type(executor) is StateActConfig
    assert executor.repeat_limit == 5 and executor.model_fields_set == {"kind", "repeat_limit"}
    spec = TaskCreate.model_validate({"environment": "textcraft", "executor": {
        "kind": "spec", "spec": "pass", "models": ["sim:a", "sim:b"]}}).run_config().executor
    assert type(spec) is SpecConfig and spec.spec == "pass"
    assert type(TaskCreate.model_validate({"environment": "x"}).run_config().executor) is (
        ReActConfig)
