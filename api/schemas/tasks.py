"""The task family: ``TaskCreate`` (the request, with its strict sections) and ``TaskPublic`` /
``TaskDetail`` / ``TaskList`` (what ``/tasks`` returns)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    computed_field,
    field_validator,
)

from adapt.engine import config as engine_config
from adapt.engine.tree import TaskResult, TaskStatus, UsageTotals
from api.schemas.common import FROM_ROWS, STRICT
from api.schemas.run_config import (
    ApprovalCreate,
    BudgetCreate,
    ExecutorCreate,
    MonitorCreate,
    PlannerCreate,
    ReuseCreate,
    RunConfig,
    engine_run_config,
    shown,
)
from api.schemas.webhooks import WebhookSubscription


# -- tasks: create --------------------------------------------------------------------------
class TaskCreate(RunConfig):
    """A task to run: the run configuration (its keys, defaults and limits as a task's
    ``run_config`` shows them), the environment, and the models. Unknown fields are rejected;
    types are strict (no coercion)."""

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
    # (a section left at its defaults is not in what an Idempotency-Key compares: POST /tasks
    # hashes the fields set that differ from their defaults)
    approval: ApprovalCreate = Field(
        default_factory=ApprovalCreate,
        description=RunConfig.model_fields["approval"].description)
    reuse: ReuseCreate = Field(default_factory=ReuseCreate,
                               description=RunConfig.model_fields["reuse"].description)
    webhook: WebhookSubscription | None = Field(
        default=None, description="Send this task's events to a URL, signed the Standard "
        "Webhooks way; the signing secret is in the 202 reply only (webhook.secret).")

    def run_config(self) -> engine_config.RunConfig:
        """The engine's run config for this request (only what the user set: the profile
        fills in the rest when the service resolves it)."""
        return engine_run_config(self)


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


class ForkedFrom(BaseModel):
    task_id: str
    node_id: int


class ForkCreate(BaseModel):
    """A fork of a finished task at one of its nodes."""

    model_config = STRICT

    node_id: int = Field(ge=1, description="The node to fork at: the calls before it (before "
                         "its first call, or its subtree's) are replayed, not paid again.")
    overrides: dict[str, Any] = Field(
        default_factory=dict, examples=[{"executor": {"model": "sim:textcraft?capability=2"},
                                         "d_max": 4}],
        description="Run config fields to change from the node on, as in POST /tasks "
        "(executor and planner models and settings, d_max, strategy options, budget, ...); "
        "empty: the same run again (the same tree).")


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
    forked_from: ForkedFrom | None = Field(
        default=None, description="A fork's origin: the task and the node it was forked from "
        "(POST /tasks/{id}/fork); null for a task submitted as such.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def links(self) -> TaskLinks:
        base = f"/tasks/{self.id}"
        return TaskLinks(self=base, tree=f"{base}/tree", events=f"{base}/events",
                         cancel=f"{base}/cancel")


class TaskDetail(TaskPublic):
    run_config: RunConfig
    result: TaskResult | None = Field(description="The engine's result once finished.")

    @field_validator("run_config", mode="before")
    @classmethod
    def _shown(cls, value: Any) -> Any:
        return shown(value) if isinstance(value, Mapping) else value


class TaskList(BaseModel):
    items: list[TaskPublic]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= to get the next (older) page; null on the last page.")
