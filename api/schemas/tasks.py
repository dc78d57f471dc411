"""The task family: ``TaskCreate`` (the request, with its strict sections) and ``TaskPublic`` /
``TaskDetail`` / ``TaskList`` (what ``/tasks`` returns)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, computed_field

from adapt.engine.budget import Budget
from adapt.engine.config import ExecutorConfig, MonitorConfig, PlannerConfig, RunConfig
from adapt.engine.tree import TaskResult, TaskStatus, UsageTotals
from api.schemas.common import FROM_ROWS, STRICT
from api.schemas.webhooks import WebhookSubscription

_MODEL_SPEC_HELP = (
    "Model spec: openai:<model>[@<base_url>], openai-completions:<model>[@<base_url>], "
    "sim:<name>[?knob=value] (sim:textcraft plays TextCraft only), local:<name> or "
    'script:{"executor": [...], "planner": [...], "rules": [...]} (answers written in advance, '
    "any environment, offline). Unset: the server's default model (the SIMULATED TextCraft "
    "model when no OpenAI key is configured). Non-loopback endpoints are refused unless the "
    "server sets ADAPT_ALLOW_REMOTE_LLM=1."
)


# -- tasks: create --------------------------------------------------------------------------
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


#: what a request holds besides the run configuration
_REQUEST_ONLY: dict[str, Any] = {"environment": True, "environment_config": True, "goal": True,
                                 "executor": {"model"}, "planner": {"model"}, "webhook": True}


class TaskCreate(RunConfig):
    """A task to run: the run configuration (``RunConfig``: its keys, defaults and limits),
    the environment, and the models. Unknown fields are rejected; types are strict (no
    coercion)."""

    model_config = STRICT

    environment: str = Field(min_length=1, max_length=128, examples=["textcraft"],
                             description="A registered environment (see GET /environments).")
    environment_config: dict[str, Any] = Field(
        default_factory=dict, examples=[{"seed": 3}],
        description="Validated against the environment's config schema (GET /environments).",
    )
    goal: str | None = Field(default=None, min_length=1, max_length=10_000,
                             description="Goal; unset: the environment's own goal.")
    # the sections, strict like the request (and the executor and planner take a model)
    executor: ExecutorCreate = Field(default_factory=ExecutorCreate)
    planner: PlannerCreate = Field(default_factory=PlannerCreate)
    monitor: MonitorCreate = Field(default_factory=MonitorCreate,
                                   description=RunConfig.model_fields["monitor"].description)
    budget: BudgetCreate = Field(default_factory=BudgetCreate)
    webhook: WebhookSubscription | None = Field(
        default=None, description="Send this task's events to a URL, signed the Standard "
        "Webhooks way; the signing secret is in the 202 reply only (webhook.secret).")

    def run_config(self) -> RunConfig:
        # exclude_unset: the profile fills in only what the user did not set
        return RunConfig.model_validate(self.model_dump(exclude=_REQUEST_ONLY,
                                                        exclude_unset=True))


# -- tasks: read ----------------------------------------------------------------------------
class ModelInfo(BaseModel):
    model: str = Field(examples=["sim:textcraft?capability=1"])
    simulated: bool


class TaskModels(BaseModel):
    executor: ModelInfo
    planner: ModelInfo


class TaskLinks(BaseModel):
    self: str
    tree: str
    events: str
    cancel: str


class TaskWebhook(BaseModel):
    id: str
    url: str
    events: list[str]
    secret: str | None = Field(default=None, description="The signing secret (whsec_...): in "
                               "the reply that created the task only.")
    deliveries: str = Field(description="The delivery log of this task.")


class TaskPublic(BaseModel):
    model_config = FROM_ROWS

    id: str = Field(examples=["3f0c2b9e8a4d4e1f9b7a6c5d4e3f2a1b"])
    status: TaskStatus
    finished: bool = Field(description="True once status is final.")
    environment: str
    environment_config: dict[str, Any]
    goal: str | None = Field(description="As requested (null: the environment's goal).")
    resolved_goal: str | None = Field(description="The goal the engine ran (once finished).")
    strategy: str
    profile: str = Field(examples=["default", "paper"], description="The profile that ran.")
    d_max: int
    success: bool | None
    reward: float | None
    usage: UsageTotals = Field(description="LLM usage; cost_usd is null when unknown.")
    models: TaskModels
    simulated: bool = Field(description="True if the executor or the planner is simulated.")
    nodes_count: int
    max_depth: int
    error: str | None
    attempt: int = Field(description="How many times a worker has started the task.")
    worker: str | None = Field(
        default=None, description="The worker process that runs the current attempt, or ran "
        "the last one (`host:pid:...`, as the worker logs it when it starts); null before a "
        "worker took the task.")
    cancel_requested: bool
    last_seq: int = Field(description="Sequence number of the task's latest event.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime
    webhook: TaskWebhook | None = Field(default=None, description="The task's own webhook.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def links(self) -> TaskLinks:
        base = f"/tasks/{self.id}"
        return TaskLinks(self=base, tree=f"{base}/tree", events=f"{base}/events",
                         cancel=f"{base}/cancel")


class TaskDetail(TaskPublic):
    run_config: RunConfig
    result: TaskResult | None = Field(description="The engine's result once finished.")


class TaskList(BaseModel):
    items: list[TaskPublic]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= to get the next (older) page; null on the last page.")
