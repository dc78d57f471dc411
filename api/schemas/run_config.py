"""The run configuration as the API takes and shows it, mapped from the engine's one by name.

The engine defines each field once (``adapt/engine/config.py``: its type, default, limits and
description); each field here names the engine field it maps (``engine(Model, "name")``), so it
takes that definition, and an engine field is part of the API only where this module maps it:
a change in the engine does not change the API by itself (``tests/api/test_config_mapping.py``
checks that every field mapped here has the engine's type and definition).

- Requests (strict): ``ExecutorCreate``, ``PlannerCreate``, ``MonitorCreate``,
  ``BudgetCreate``; ``TaskCreate`` (``api/schemas/tasks.py``) adds them to the run's fields.
  The executor's section is flat, every kind's fields in one object: the engine's is the
  config model of ``executor.kind``, and :func:`engine_run_config` hands it the fields that
  kind takes. ``executor.model``, ``executor.models`` and ``planner.model`` are the request's
  ways to name models; the service resolves them into the engine's ``ModelSpecs``.
- Responses: ``RunConfig`` (with ``ExecutorConfig``, ``PlannerConfig``, ``MonitorConfig``,
  ``Budget``): a task's stored config (the engine's resolved config, or a row stored before
  it) as :func:`shown` maps it. The classes keep the names the OpenAPI document has always
  given them; they are not the engine's classes of the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapt.engine import config as engine_config
from adapt.engine.approvals import ActionName, TimeoutOutcome
from adapt.engine.approvals import ApprovalConfig as EngineApproval
from adapt.engine.budget import Budget as EngineBudget
from adapt.engine.config import (
    Cascade,
    CascadeOrder,
    PassOutput,
    PlanOutput,
    PlansMode,
    Profile,
    ReactFormat,
    SelfAssessment,
    StopSequence,
    VerificationMode,
)
from adapt.engine.config import field_info as engine
from adapt.engine.executors.react import ReActConfig
from adapt.engine.executors.spec_agent.config import SpecConfig
from adapt.engine.executors.stateact import StateActConfig
from api.schemas.common import STRICT

Executor = engine_config.ExecutorConfig
Planner = engine_config.PlannerConfig
Monitor = engine_config.MonitorConfig
Reuse = engine_config.ReuseConfig
Run = engine_config.RunConfig

#: the responses: what a stored config holds beyond the mapped fields is not shown
_SHOWN = ConfigDict(extra="forbid")

_MODEL_SPEC_HELP = (
    "Model spec: openai:<model>[@<base_url>], openai-completions:<model>[@<base_url>], "
    "sim:<name>[?knob=value] (sim:textcraft plays TextCraft only), local:<name> or "
    'script:{"executor": [...], "planner": [...], "rules": [...]} (answers written in advance, '
    "any environment, offline). Unset: the server's default model (the SIMULATED TextCraft "
    "model when no OpenAI key is configured). Non-loopback endpoints are refused unless the "
    "server sets ADAPT_ALLOW_REMOTE_LLM=1."
)


# -- what a task's config shows (and a request's sections start from) -------------------------
class ExecutorConfig(BaseModel):
    """The executor's section: the fields of every executor kind, flat."""

    model_config = _SHOWN

    kind: str = engine(Executor, "kind")
    spec: str = engine(SpecConfig, "spec")
    pass_output: PassOutput = engine(SpecConfig, "pass_output")
    max_steps: int | None = engine(Executor, "max_steps")
    patience: int | None = engine(Executor, "patience")
    repeat_limit: int | None = engine(StateActConfig, "repeat_limit")
    temperature: float = engine(Executor, "temperature")
    max_tokens: int = engine(Executor, "max_tokens")
    act_only: bool = engine(ReActConfig, "act_only")
    models: Cascade = Field(
        default_factory=list,
        description="Model cascade: executor model specs in order (e.g. a small model, then "
        "a larger one). A task node the first fails is retried with the next (see `cascade`), "
        "each attempt a child node labelled `attempt N: <model>`. Empty: the one executor "
        "model (`executor.model`); a list of one is the same as that model.")
    cascade: CascadeOrder = engine(Executor, "cascade")
    react_format: ReactFormat = engine(ReActConfig, "react_format")
    self_assessment: SelfAssessment = engine(ReActConfig, "self_assessment")


class PlannerConfig(BaseModel):
    model_config = _SHOWN

    temperature: float = engine(Planner, "temperature")
    max_tokens: int = engine(Planner, "max_tokens")
    stop: list[StopSequence] = engine(Planner, "stop")
    propagate_context: bool = engine(Planner, "propagate_context")
    output: PlanOutput = engine(Planner, "output")


class MonitorConfig(BaseModel):
    model_config = _SHOWN

    enabled: bool = engine(Monitor, "enabled")
    max_corrections: int = engine(Monitor, "max_corrections")


class ApprovalConfig(BaseModel):
    """Where a person decides (``approval`` of a task; docs/approvals.md)."""

    model_config = _SHOWN

    plans: bool = engine(EngineApproval, "plans")
    actions: list[ActionName] = engine(EngineApproval, "actions")
    timeout_seconds: float | None = engine(EngineApproval, "timeout_seconds")
    on_timeout: TimeoutOutcome = engine(EngineApproval, "on_timeout")
    parallel_siblings: bool = engine(EngineApproval, "parallel_siblings")


class ReuseConfig(BaseModel):
    """What the task reuses from the tenant's experience library (docs/experience.md)."""

    model_config = _SHOWN

    skills: bool = engine(Reuse, "skills")
    plans: bool = engine(Reuse, "plans")
    plans_mode: PlansMode = engine(Reuse, "plans_mode")


class Budget(BaseModel):
    """Limits for one task. ``None`` means unlimited.

    Tokens and cost are checked before each LLM call, so the call that crosses a limit completes
    and the next one is refused. The deadline also bounds a call in flight.
    """

    model_config = _SHOWN

    max_llm_calls: int | None = engine(EngineBudget, "max_llm_calls")
    max_tokens: int | None = engine(EngineBudget, "max_tokens")
    max_nodes: int | None = engine(EngineBudget, "max_nodes")
    max_cost_usd: float | None = engine(EngineBudget, "max_cost_usd")
    deadline_seconds: float | None = engine(EngineBudget, "deadline_seconds")
    max_prompt_chars: int | None = engine(EngineBudget, "max_prompt_chars")


class RunConfig(BaseModel):
    """A task's run configuration: what ran (the profile's settings and the server's budget
    figures filled in)."""

    model_config = _SHOWN

    profile: Profile = engine(Run, "profile")
    strategy: str = engine(Run, "strategy")
    d_max: int = engine(Run, "d_max")
    react_steps: int | None = engine(Run, "react_steps")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    monitor: MonitorConfig = engine(Run, "monitor", default_factory=MonitorConfig)
    budget: Budget = Field(default_factory=Budget)
    seed: int | None = engine(Run, "seed")
    verification: VerificationMode = engine(Run, "verification")
    reuse: ReuseConfig = engine(Run, "reuse", default_factory=ReuseConfig)
    grammar: bool = engine(Run, "grammar")
    approval: ApprovalConfig = engine(Run, "approval", default_factory=ApprovalConfig)


#: the sections of a run config, and the model that shows each
_SECTIONS: dict[str, type[BaseModel]] = {
    "executor": ExecutorConfig, "planner": PlannerConfig, "monitor": MonitorConfig,
    "budget": Budget, "approval": ApprovalConfig, "reuse": ReuseConfig}


def shown(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A task's stored ``run_config`` as ``RunConfig`` shows it: the mapped fields (defaults
    for those a row does not hold: another executor kind's), and ``executor.models``, the
    cascade (empty: one executor model). A row stored before configs were resolved holds
    ``executor.models`` itself."""
    out = {k: v for k, v in stored.items() if k in RunConfig.model_fields and k not in _SECTIONS}
    for name, model in _SECTIONS.items():
        section = stored.get(name) or {}
        out[name] = {k: v for k, v in section.items() if k in model.model_fields}
    models = stored.get("models")
    if isinstance(models, Mapping):
        executors = list(models.get("executor") or [])
        out["executor"]["models"] = executors if len(executors) > 1 else []
    return out


# -- requests --------------------------------------------------------------------------------
class ExecutorCreate(ExecutorConfig):
    model_config = STRICT

    model: str | None = Field(default=None, max_length=1000, description=_MODEL_SPEC_HELP,
                              examples=["sim:textcraft?capability=1", "openai:gpt-4o-mini"])


class PlannerCreate(PlannerConfig):
    model_config = STRICT

    model: str | None = Field(
        default=None, max_length=1000,
        description="Planner model spec; unset: the executor's model. " + _MODEL_SPEC_HELP,
        examples=["openai:gpt-4o-mini"],
    )


class MonitorCreate(MonitorConfig):
    model_config = STRICT


class BudgetCreate(Budget):
    model_config = STRICT


class ApprovalCreate(ApprovalConfig):
    model_config = STRICT


class ReuseCreate(ReuseConfig):
    model_config = STRICT


#: the request's ways to name models: not part of the engine's run config
_MODEL_FIELDS = {"executor": {"model", "models"}, "planner": {"model"}}


def engine_run_config(request: BaseModel) -> engine_config.RunConfig:
    """The engine's ``RunConfig`` for a request (``TaskCreate``): the fields the user set (the
    profile fills the others in), the executor's those of its kind."""
    data = request.model_dump(include=set(RunConfig.model_fields), exclude_unset=True)
    for section, names in _MODEL_FIELDS.items():
        for name in names:
            data.get(section, {}).pop(name, None)
    data["executor"] = engine_config.executor_config(data.get("executor", {}), only_known=True)
    return engine_config.RunConfig.model_validate(data)


__all__ = [
    "ApprovalConfig", "ApprovalCreate", "Budget", "BudgetCreate", "ExecutorConfig", "ExecutorCreate",
    "MonitorConfig", "MonitorCreate", "PlannerConfig", "PlannerCreate", "ReuseConfig", "ReuseCreate",
    "RunConfig", "engine_run_config",
    "shown",
]
