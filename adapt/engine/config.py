"""A run's configuration: what a caller asks for (``RunConfig``) and what runs
(``ResolvedConfig``, made by :func:`adapt.engine.resolve.resolve_config`, the one place a
profile, the operator's budget limits and the models are applied).

Every field is defined here once (its type, default, limits and description); the API maps the
fields it exposes from these definitions (``api/schemas/run_config.py``) and the settings use
``Budget`` itself for the operator's figures. Every model is frozen: a configuration is a value.

The executor's section is the config model of its ``kind``: fields every executor takes are in
:class:`ExecutorConfig`, and each executor class names its own subclass as ``config_model``
(``ReActConfig`` in ``executors/react.py``, ...; a plug-in's through the executor registry).
``RunConfig(executor={"kind": "stateact", ...})`` validates against the StateAct model, and a
field the kind does not take is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from adapt.engine.approvals import ApprovalConfig
from adapt.engine.budget import Budget
from adapt.engine.executors.registry import EXECUTORS, available_executors

#: the range of ``RunConfig.d_max`` (the API, the CLI options and the bench grids read it here)
D_MAX_RANGE: tuple[int, int] = (1, 8)
#: the largest ``RunConfig.react_steps`` (the most executor steps x the deepest d_max)
REACT_STEPS_MAX = 4000
#: the most models one cascade may list
CASCADE_MAX = 8

# -- the closed sets, each named once --------------------------------------------------------
Profile = Literal["default", "paper"]
VerificationMode = Literal["env", "off"]
CascadeOrder = Literal["before", "after"]
SelfAssessment = Literal["thought", "any_line", "off"]
ReactFormat = Literal["line", "numbered"]
PassOutput = Literal["auto", "logprob", "summary", "raw", "shorter"]
PlanOutput = Literal["text", "json"]
PlansMode = Literal["reuse", "example"]

FROZEN = ConfigDict(extra="forbid", frozen=True)


def _known_kind(value: str) -> str:
    known = available_executors()
    if value not in known:  # its own type: a worker tells a kind it lacks from a bad value
        raise PydanticCustomError(
            "unknown_executor_kind", "unknown executor kind '{kind}'; available: {available}",
            {"kind": value, "available": ", ".join(known)})
    return value


def _once_each(value: list[str]) -> list[str]:
    seen: set[str] = set()
    for spec in value:
        if spec in seen:
            raise ValueError(f"model {spec!r} is listed twice; a cascade tries each model once")
        seen.add(spec)
    return value


#: an executor kind the registry knows (built-in or a plug-in's)
ExecutorKind = Annotated[str, AfterValidator(_known_kind)]
#: a model spec string (``adapt.llm.spec``); the service checks it against its endpoints
ModelSpecText = Annotated[str, Field(min_length=1, max_length=1000)]
#: executor model specs in cascade order, each once
Cascade = Annotated[list[ModelSpecText], Field(max_length=CASCADE_MAX),
                    AfterValidator(_once_each)]
#: a stop sequence of a planner call
StopSequence = Annotated[str, Field(min_length=1, max_length=32)]
#: the field of the executors that read a self-assessment (ReAct, StateAct)
SelfAssessmentField = Annotated[SelfAssessment, Field(
    description="Where 'task completed' / 'task failed' count as the executor's verdict: "
    "in a thought only, in any line, actions included (the ADaPT TextCraft code; set by "
    "profile 'paper'), or nowhere: only the environment ends the run (StateAct's code; "
    "profile 'paper' with the stateact executor on ALFWorld).")]


# -- the executor: fields every executor takes; each kind's own model adds its fields ---------
class ExecutorConfig(BaseModel):
    """What every executor takes. An executor's own fields are in its ``config_model``, a
    subclass of this (this class itself for a kind that adds none)."""

    model_config = FROZEN

    kind: ExecutorKind = Field(
        default="react",
        description="Executor design: react, stateact, stateflow, spec (an agent from a "
        "declarative behaviour specification, see `spec`), tools (the environment's actions "
        "as function tools of a chat model, see docs/tools.md) or one a plug-in package "
        "registers (entry point group `adapt.executors`).")
    max_steps: int | None = Field(
        default=None, ge=1, le=500,
        description="LLM calls per executor run; default from the environment (TextCraft: 20).",
    )
    patience: int | None = Field(
        default=8, ge=1, le=500,
        description="Consecutive failed or 'OK.' observations after which the run fails "
        "(null: no such rule, as StateAct's code under profile 'paper').",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=128, ge=1, le=8192, description="Per executor step.")
    cascade: CascadeOrder = Field(
        default="before",
        description="When the next model of `models` gets a failed node: 'before' its "
        "decomposition (escalate first, decompose when every model failed); 'after' it "
        "(decompose with the first model, escalate only where decomposition failed or "
        "cannot happen, at d_max).")


def config_model(kind: str) -> type[ExecutorConfig]:
    """The config model of executor ``kind``: its class's ``config_model`` (through the
    executor registry, so a plug-in's too), else :class:`ExecutorConfig`."""
    model = getattr(EXECUTORS.get(kind), "config_model", ExecutorConfig)
    if not (isinstance(model, type) and issubclass(model, ExecutorConfig)):
        raise TypeError(f"executor kind {kind!r}: config_model must subclass ExecutorConfig, "
                        f"got {model!r}")
    return model


def executor_config(value: ExecutorConfig | Mapping[str, Any], *,
                    only_known: bool = False) -> ExecutorConfig:
    """``value`` as its kind's config model (the fields it was given stay the ones set).

    ``only_known``: leave out the fields the kind does not take instead of refusing them (the
    API's flat request, a profile's or a bench's settings for any kind, and configs stored
    before each kind had its own model)."""
    fields = ({"kind": value.kind, **value.model_dump(exclude_unset=True)}
              if isinstance(value, ExecutorConfig) else dict(value))
    kind = fields.get("kind", "react")
    if not isinstance(kind, str) or kind not in available_executors():
        return ExecutorConfig.model_validate(fields)  # the kind's error, at executor.kind
    model = config_model(kind)
    if isinstance(value, model):
        return value
    if only_known:
        fields = {k: v for k, v in fields.items() if k in model.model_fields}
    return model.model_validate(fields)


C = TypeVar("C", bound=ExecutorConfig)


def config_as(config: ExecutorConfig, model: type[C]) -> C:
    """``config`` as ``model``, the config model of the executor that reads it: ``config``
    itself when it is one (the usual case), else the fields of it ``model`` takes (the
    ``stateflow`` strategy runs its machine whatever ``executor.kind`` says)."""
    if isinstance(config, model):
        return config
    fields = config.model_dump(exclude_unset=True)
    return model.model_validate({k: v for k, v in fields.items() if k in model.model_fields})


# -- the planner and the decoding monitor ----------------------------------------------------
class MonitorConfig(BaseModel):
    model_config = FROZEN

    enabled: bool = Field(
        default=True,
        description="Enforce the executor's and planner's output format at generation time "
        "with the decoding monitor (cut at the first violation, prefix the valid next state, "
        "resume).")
    max_corrections: int = Field(
        default=3, ge=0, le=20, description="Corrections per generation before giving up.")


class PlannerConfig(BaseModel):
    model_config = FROZEN

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=16384)
    stop: list[StopSequence] = Field(
        default_factory=list, max_length=4,
        description="Stop sequences of a planner call (none by default; profile 'paper' uses a "
        "blank line on ALFWorld, as the ADaPT code).")
    propagate_context: bool = Field(
        default=True, description="Hand the propagated salient state to the planner too."
    )
    output: PlanOutput = Field(
        default="text",
        description="How the planner writes its plan: 'text' (Step N: lines and an Execution "
        "Order: line) or 'json' (a JSON object of steps and execution order, asked for as "
        "structured output where the endpoint takes a JSON schema; an answer that is not JSON "
        "is read as text). See docs/tools.md.")


# -- experience ------------------------------------------------------------------------------
class ReuseConfig(BaseModel):
    """What a run reuses from the tenant's experience library (docs/experience.md)."""

    model_config = FROZEN

    skills: bool = Field(
        default=False,
        description="Before a task node's executor runs, replay a stored solution of its "
        "goal in the live environment: a goal the environment confirms ends the node with no "
        "LLM call (termination 'reused'); otherwise the executor runs as usual and the entry "
        "is demoted. Needs verification 'env'. Off by default and in profile 'paper'.")
    plans: bool = Field(
        default=False,
        description="When ADaPT would call the planner on a goal whose decomposition worked "
        "before (the environment confirmed the goal once its sub-tasks ran), use the stored "
        "plan (see plans_mode); a reused plan that then fails is demoted. Needs verification "
        "'env'. Off by default and in profile 'paper'.")
    plans_mode: PlansMode = Field(
        default="reuse",
        description="How a stored plan is used: 'reuse' takes it as the node's plan (no "
        "planner call; the plan's 'reused' names the entry); 'example' shows it to the "
        "planner as a plan that worked before (one planner call, as without reuse).")


# -- the models a run calls ------------------------------------------------------------------
class ModelSpecs(BaseModel):
    """The models of a resolved run, as spec strings: the executor's (in cascade order: a
    failed node goes to the next, see ``executor.cascade``) and the planner's."""

    model_config = FROZEN

    executor: tuple[ModelSpecText, ...] = Field(min_length=1, max_length=CASCADE_MAX)
    planner: ModelSpecText

    @field_validator("executor")
    @classmethod
    def _once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        _once_each(list(value))
        return value

    @property
    def cascade(self) -> bool:
        """More than one executor model."""
        return len(self.executor) > 1


# -- the run ---------------------------------------------------------------------------------
def _default_executor() -> ExecutorConfig:
    return executor_config({})


class RunConfig(BaseModel):
    """What a caller asks for; a field left unset is the profile's to fill
    (:func:`adapt.engine.resolve.resolve_config`)."""

    model_config = FROZEN

    profile: Profile = Field(
        default="default",
        description="'default': the project's improved behaviour; 'paper': the published "
        "protocols (prompts, knobs, baselines) of the papers, per environment (see "
        "docs/reproducing-the-papers.md). Settings given explicitly win over the profile's.")
    strategy: str = Field(default="adapt", max_length=64, examples=["adapt", "react"],
                          description="How the task is driven (adapt, react, ...).")
    d_max: int = Field(default=3, ge=D_MAX_RANGE[0], le=D_MAX_RANGE[1],
                       description="Maximum decomposition depth (default 3; profile 'paper': "
                       "the paper's for the environment, TextCraft 4).")
    react_steps: int | None = Field(
        default=None, ge=1, le=REACT_STEPS_MAX,
        description="Strategy react (the executor alone on the whole task): its step budget. "
        "Default: the executor's steps x d_max (the ADaPT paper's rule); profile 'paper' sets "
        "the published budget (TextCraft and ALFWorld 60, InterCode 10).")
    executor: SerializeAsAny[ExecutorConfig] = Field(default_factory=_default_executor)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    monitor: MonitorConfig = Field(
        default_factory=MonitorConfig,
        description="The decoding monitor on the executor's and planner's output (on by default).")
    budget: Budget = Field(default_factory=Budget)
    seed: int | None = Field(default=None, description="Passed to the models with every call.")
    verification: VerificationMode = Field(
        default="env",
        description="'env': the environment checks every task node's goal (a refuted claim "
        "fails the node, a confirmed goal ends or skips it; see docs/verification.md); 'off': "
        "the executor's claim decides (profile 'paper').")
    reuse: ReuseConfig = Field(
        default_factory=ReuseConfig,
        description="Reuse of verified experience across tasks: 'skills' replays stored "
        "sub-goal solutions before the executor, 'plans' takes stored decompositions in place "
        "of a planner call (see docs/experience.md).")
    grammar: bool = Field(
        default=False,
        description="Constrained decoding: send the environment's grammars (valid actions for "
        "the executor, checkable plan lines for the planner) with the requests; local: models "
        "and endpoints whose server_kind is vllm or llama.cpp apply them, others ignore them.")
    approval: ApprovalConfig = Field(
        default_factory=ApprovalConfig,
        description="Where a person decides: plans (and named actions) wait for approval, "
        "edit or rejection (see docs/approvals.md). Off by default.")

    @field_validator("executor", mode="before")
    @classmethod
    def _executor(cls, value: Any) -> Any:
        if isinstance(value, ExecutorConfig | Mapping):
            return executor_config(value)
        return value


class ResolvedConfig(RunConfig):
    """A run's configuration with everything applied: the profile, the operator's budget
    limits and the models. The engine takes it as it is; it is frozen, and stored as the
    task's ``run_config``."""

    models: ModelSpecs | None = Field(
        default=None,
        description="The models by spec (null: the caller passed the models themselves, as a "
        "library caller of run_task does).")

    @classmethod
    def from_stored(cls, data: Mapping[str, Any], *, executor_model: str,
                    planner_model: str) -> ResolvedConfig:
        """A stored ``run_config``. Rows written before the resolved config kept the cascade
        in ``executor.models`` (empty: the task's ``executor_model``), the models in the
        task's columns, and every executor kind's fields in one flat ``executor``."""
        data = dict(data)
        executor = dict(data.get("executor") or {})
        cascade = executor.pop("models", None) or [executor_model]
        data.setdefault("models", {"executor": cascade, "planner": planner_model})
        data["executor"] = executor_config(executor, only_known=True)
        return cls.model_validate(data)


def field_info(model: type[BaseModel], name: str, **changes: Any) -> Any:
    """``model``'s definition of field ``name`` (its limits, default, description), for a
    model that maps it; ``changes``: attributes of the copy to change (``default=...``: a
    subclass's own default for a field it inherits)."""
    info: FieldInfo = copy.copy(model.model_fields[name])
    for key, value in changes.items():
        setattr(info, key, value)
    return info


__all__ = [
    "CASCADE_MAX",
    "D_MAX_RANGE",
    "REACT_STEPS_MAX",
    "Cascade",
    "CascadeOrder",
    "ExecutorConfig",
    "ExecutorKind",
    "ModelSpecText",
    "ModelSpecs",
    "MonitorConfig",
    "PassOutput",
    "PlanOutput",
    "PlannerConfig",
    "PlansMode",
    "Profile",
    "ReactFormat",
    "ResolvedConfig",
    "ReuseConfig",
    "RunConfig",
    "SelfAssessment",
    "SelfAssessmentField",
    "StopSequence",
    "VerificationMode",
    "config_as",
    "config_model",
    "executor_config",
    "field_info",
]
