"""Request and response models, grouped in families: ``TaskCreate`` / ``TaskPublic`` /
``TaskDetail`` / ``TaskList``, ``NodePublic`` / ``TreeNode`` / ``NodeDetail``, events,
environments, health, and ``Problem`` (RFC 9457)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field, field_validator

from adapt.engine.budget import Budget
from adapt.engine.config import ExecutorConfig, MonitorConfig, PlannerConfig, RunConfig
from adapt.engine.events import CallData, FinishedData, NodeData, ResumedData, StepData
from adapt.engine.tree import NodeStatus, Plan, TaskResult, TaskStatus, UsageTotals

#: response models read ORM rows by attribute (``Model.model_validate(row)``)
FROM_ROWS = ConfigDict(from_attributes=True)
_MODEL_SPEC_HELP = (
    "Model spec: openai:<model>[@<base_url>], openai-completions:<model>[@<base_url>] or "
    "sim:<name>[?knob=value]. Unset: the server's default model (the SIMULATED TextCraft model "
    "when no OpenAI key is configured). Non-loopback endpoints are refused unless the server "
    "sets ADAPT_ALLOW_REMOTE_LLM=1."
)


# -- problems -------------------------------------------------------------------------------
class FieldError(BaseModel):
    location: str = Field(examples=["body"], description="body, query, path or header")
    field: str = Field(examples=["d_max"], description="Dotted path of the field")
    message: str = Field(examples=["Input should be less than or equal to 8"])
    type: str | None = Field(default=None, examples=["less_than_equal"])


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(examples=["urn:adapt:problem:validation-error"])
    title: str = Field(examples=["Invalid request"])
    status: int = Field(examples=[422])
    detail: str = Field(examples=["1 invalid field: d_max: Input should be less than or equal "
                                  "to 8"])
    instance: str | None = Field(default=None, examples=["/tasks"])
    errors: list[FieldError] | None = None


# -- tasks: create --------------------------------------------------------------------------
# Request models are strict: `"d_max": true` or `"3"` is a 422, never silently coerced.
STRICT = ConfigDict(extra="forbid", strict=True)


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


WebhookEvent = Literal["task.finished", "node.finished"]


class WebhookSubscription(BaseModel):
    """Where to send a task's events (signed; see docs/webhooks.md)."""

    model_config = STRICT

    url: str = Field(min_length=1, max_length=2000, examples=["https://example.com/hooks/adapt"],
                     description="http(s) URL on a public address (the operator may allow "
                     "private networks: ADAPT_WEBHOOK_ALLOWED_NETWORKS).")
    events: list[WebhookEvent] = Field(
        default_factory=lambda: list[WebhookEvent](["task.finished"]), min_length=1,
        max_length=2, description="task.finished (once, when the task ends) and/or "
        "node.finished (each node of the tree as it ends).")


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


# -- tree and nodes -------------------------------------------------------------------------
class NodePublic(BaseModel):
    model_config = FROM_ROWS

    id: int
    parent_id: int | None
    position: int
    kind: Literal["task", "group"]
    goal: str
    depth: int
    logic: Literal["and", "or"] | None
    status: NodeStatus = Field(examples=["succeeded"])
    executor_success: bool | None
    self_assessed: bool | None
    claim: bool | None = Field(default=None, description="The executor's own outcome for the "
                               "node (before verification); null: it made none (the node was "
                               "skipped as already satisfied, or verified mid-run).")
    verdict: Literal["confirmed", "refuted", "unknown"] | None = Field(
        default=None, description="The environment's verdict on the node's goal; null: not "
        "checked (verification off, or a group node).")
    evidence: str | None = Field(default=None, description="Why, e.g. 'holds 2 of 6 oak "
                                 "planks'.")
    success: bool | None
    reward: float | None
    termination: str | None
    steps_count: int
    usage: UsageTotals
    error: str | None
    label: str | None


class TreeNode(NodePublic):
    children: list[TreeNode] = Field(default_factory=list)


class TaskTree(BaseModel):
    task_id: str
    status: TaskStatus
    finished: bool
    success: bool | None
    reward: float | None
    last_seq: int
    nodes_count: int = Field(description="Nodes in the tree below.")
    tree: TreeNode | None = Field(description="The root node; null before the first node.")


class StepPublic(BaseModel):
    model_config = FROM_ROWS

    index: int
    kind: Literal["thought", "action"]
    raw: str
    text: str
    observation: str
    reward: float
    done: bool
    error: str | None
    extra: dict[str, Any] | None


class LLMCallPublic(BaseModel):
    model_config = FROM_ROWS

    id: int
    node_id: int | None
    role: str = Field(examples=["executor", "planner"])
    model: str
    simulated: bool
    prompt: str | None = Field(description="Null when the server does not store prompts.")
    messages: list[dict[str, Any]] | None
    stop: list[str]
    completion: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_s: float
    cost_usd: float | None
    monitor: dict[str, Any] | None = Field(
        default=None, description="The decoding monitor's record for this call: validations, "
        "violations, corrections, the violation and the correction prefix; null when the call "
        "was not monitored.")
    retries: int = Field(default=0, description="Transient provider errors (429, 5xx, "
                         "timeouts) retried before this answer.")
    attempt: int
    created_at: datetime

    @field_validator("stop", mode="before")
    @classmethod
    def _no_stop(cls, value: Any) -> Any:
        return [] if value is None else value


class NodeDetail(NodePublic):
    task_id: str
    plan: Plan | None = Field(description="The planner's output: raw text and parsed steps and "
                              "logic expression (null for nodes that were not decomposed).")
    context_in: str | None
    context_out: str | None
    children: list[int] = Field(default_factory=list,
                                description="Ids of the child nodes, in order.")
    steps: list[StepPublic] = Field(default_factory=list,
                                    description="The executor trajectory of this node.")
    llm_calls: list[LLMCallPublic] = Field(default_factory=list)


# -- events ---------------------------------------------------------------------------------
# One model per event type; ``data`` is the engine's payload model for that type.
class _Event(BaseModel):
    seq: int = Field(description="Per-task, gap-free, from 1.")
    created_at: datetime


class NodeEventPublic(_Event):
    type: Literal["node.created", "node.updated"]
    data: NodeData


class StepEventPublic(_Event):
    type: Literal["step"]
    data: StepData


class CallEventPublic(_Event):
    type: Literal["llm_call"]
    data: CallData = Field(description="The call; its prompt and messages are null (see the "
                           "node detail).")


class FinishedEventPublic(_Event):
    type: Literal["task.finished"]
    data: FinishedData


class ResumedEventPublic(_Event):
    type: Literal["task.resumed"]
    data: ResumedData


EventPublic = Annotated[
    NodeEventPublic | StepEventPublic | CallEventPublic | FinishedEventPublic
    | ResumedEventPublic,
    Field(discriminator="type"),
]
EVENT = TypeAdapter(EventPublic)


class EventList(BaseModel):
    events: list[EventPublic]
    last_seq: int = Field(description="Seq of the last event returned (or `since` when none): "
                          "pass it as ?since= to continue.")
    finished: bool = Field(description="True when the task is finished and every event has "
                           "been returned (no need to poll again).")
    status: TaskStatus


# -- environments, health -------------------------------------------------------------------
class EnvironmentPublic(BaseModel):
    name: str = Field(examples=["textcraft"])
    description: str
    config_schema: dict[str, Any] = Field(description="JSON schema of environment_config.")
    default_max_steps: int
    action_grammar: str


class EnvironmentList(BaseModel):
    items: list[EnvironmentPublic]
    strategies: list[str] = Field(description="Strategies a task may use.",
                                  examples=[["adapt", "react"]])
    executors: list[str] = Field(
        default_factory=list, description="Executor kinds a task may use (`executor.kind`): "
        "the built-ins, then plug-ins.", examples=[["react", "stateact", "stateflow", "spec"]])
    profiles: list[str] = Field(default_factory=list,
                                description="Profiles a task may use (`profile`).",
                                examples=[["default", "paper"]])


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str] = Field(examples=[{"database": "ok", "dispatcher": "ok"}])


TreeNode.model_rebuild()


# -- webhooks -------------------------------------------------------------------------------
class WebhookEndpointCreate(WebhookSubscription):
    description: str | None = Field(default=None, max_length=255)


class WebhookEndpointPublic(BaseModel):
    id: str
    url: str
    events: list[str]
    description: str | None
    created_at: datetime
    secret: str | None = Field(default=None, description="The signing secret (whsec_...): in "
                               "the reply that created the endpoint only.")


class WebhookEndpointList(BaseModel):
    items: list[WebhookEndpointPublic]


class DeliveryAttempt(BaseModel):
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int


class WebhookDeliveryPublic(BaseModel):
    id: str = Field(description="The webhook-id header of every attempt.")
    endpoint_id: str
    url: str
    event_type: str
    payload: dict[str, Any] = Field(description="The body sent.")
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: datetime | None = Field(description="When a pending delivery is tried "
                                             "next.")
    last_status_code: int | None
    last_error: str | None
    log: list[DeliveryAttempt] = Field(description="The latest attempts, oldest first.")
    created_at: datetime
    delivered_at: datetime | None


class WebhookDeliveryList(BaseModel):
    items: list[WebhookDeliveryPublic]
    next_cursor: str | None = Field(
        default=None, description="Pass as ?cursor= to get the next (newer) page; null on the "
        "last page.")
