"""Request and response models, grouped in families: ``TaskCreate`` / ``TaskPublic`` /
``TaskDetail`` / ``TaskList``, ``NodePublic`` / ``TreeNode`` / ``NodeDetail``, events,
environments, health, and ``Problem`` (RFC 9457)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapt.engine.budget import Budget
from adapt.engine.config import ExecutorConfig, MonitorConfig, PlannerConfig, RunConfig
from adapt.engine.tree import Plan, TaskResult, UsageTotals
from adapt.store.models import FINAL_STATUSES, LLMCallRow, NodeRow, StepRow, Task

TaskStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "budget_exceeded",
                     "error"]
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


class TaskCreate(BaseModel):
    """A task to run. Unknown fields are rejected; types are strict (no coercion)."""

    model_config = STRICT

    environment: str = Field(min_length=1, max_length=128, examples=["textcraft"],
                             description="A registered environment (see GET /environments).")
    environment_config: dict[str, Any] = Field(
        default_factory=dict, examples=[{"seed": 3}],
        description="Validated against the environment's config schema (GET /environments).",
    )
    goal: str | None = Field(default=None, min_length=1, max_length=10_000,
                             description="Goal; unset: the environment's own goal.")
    strategy: str = Field(default="adapt", max_length=64, examples=["adapt", "react"],
                          description="How the task is driven (adapt, react, ...).")
    d_max: int = Field(default=3, ge=1, le=8, description="Maximum decomposition depth.")
    profile: Literal["default", "paper"] = Field(
        default="default", examples=["default", "paper"],
        description="'default': the project's improved behaviour; 'paper': the published "
        "protocols of the papers for the environment (prompts, step and token limits, no "
        "decoding monitor; see docs/reproducing-the-papers.md). Settings given explicitly win.")
    executor: ExecutorCreate = Field(default_factory=ExecutorCreate)
    planner: PlannerCreate = Field(default_factory=PlannerCreate)
    monitor: MonitorCreate = Field(
        default_factory=MonitorCreate,
        description="The decoding monitor on the executor's and planner's output (on by default).")
    budget: BudgetCreate = Field(default_factory=BudgetCreate)
    seed: int | None = Field(default=None, description="Passed to the models with every call.")
    verification: Literal["env", "off"] = Field(
        default="env", description=RunConfig.model_fields["verification"].description)
    grammar: bool = Field(default=False,
                          description=RunConfig.model_fields["grammar"].description)

    def run_config(self) -> RunConfig:
        # exclude_unset: the profile fills in only what the user did not set
        chosen = self.model_dump(include={"verification", "grammar"}, exclude_unset=True)
        return RunConfig(
            **chosen,
            strategy=self.strategy, d_max=self.d_max, seed=self.seed,
            budget=Budget.model_validate(self.budget.model_dump(exclude_unset=True)),
            monitor=MonitorConfig.model_validate(self.monitor.model_dump(exclude_unset=True)),
            profile=self.profile,
            executor=ExecutorConfig.model_validate(
                self.executor.model_dump(exclude={"model"}, exclude_unset=True)),
            planner=PlannerConfig.model_validate(
                self.planner.model_dump(exclude={"model"}, exclude_unset=True)),
        )


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


class TaskPublic(BaseModel):
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
    links: TaskLinks

    @classmethod
    def from_row(cls, t: Task) -> TaskPublic:
        return cls(**_task_fields(t))


class TaskDetail(TaskPublic):
    run_config: RunConfig
    result: TaskResult | None = Field(description="The engine's result once finished.")

    @classmethod
    def from_row(cls, t: Task) -> TaskDetail:
        return cls(**_task_fields(t), run_config=RunConfig.model_validate(t.run_config),
                   result=TaskResult.model_validate(t.result) if t.result else None)


def _task_fields(t: Task) -> dict[str, Any]:
    base = f"/tasks/{t.id}"
    return dict(
        id=t.id, status=t.status, finished=t.status in FINAL_STATUSES,
        environment=t.environment, environment_config=t.environment_config, goal=t.goal,
        resolved_goal=t.resolved_goal, strategy=t.strategy, profile=t.profile, d_max=t.d_max,
        success=t.success,
        reward=t.reward,
        usage=UsageTotals(llm_calls=t.llm_calls, prompt_tokens=t.prompt_tokens,
                          completion_tokens=t.completion_tokens, cost_usd=t.cost_usd),
        models=TaskModels(
            executor=ModelInfo(model=t.executor_model, simulated=t.executor_simulated),
            planner=ModelInfo(model=t.planner_model, simulated=t.planner_simulated),
        ),
        simulated=t.executor_simulated or t.planner_simulated, nodes_count=t.nodes_count,
        max_depth=t.max_depth, error=t.error, attempt=t.attempt,
        cancel_requested=t.cancel_requested, last_seq=t.last_seq, created_at=t.created_at,
        started_at=t.started_at, finished_at=t.finished_at, updated_at=t.updated_at,
        links=TaskLinks(self=base, tree=f"{base}/tree", events=f"{base}/events",
                        cancel=f"{base}/cancel"),
    )


class TaskList(BaseModel):
    items: list[TaskPublic]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= to get the next (older) page; null on the last page.")


# -- tree and nodes -------------------------------------------------------------------------
class NodePublic(BaseModel):
    id: int
    parent_id: int | None
    position: int
    kind: Literal["task", "group"]
    goal: str
    depth: int
    logic: Literal["and", "or"] | None
    status: str = Field(examples=["succeeded"],
                        description="pending, running, succeeded, failed, skipped or cancelled")
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

    @staticmethod
    def fields_of(n: NodeRow) -> dict[str, Any]:
        return dict(
            id=n.id, parent_id=n.parent_id, position=n.position, kind=n.kind, goal=n.goal,
            depth=n.depth, logic=n.logic, status=n.status, executor_success=n.executor_success,
            self_assessed=n.self_assessed, claim=n.claim, verdict=n.verdict,
            evidence=n.evidence, success=n.success, reward=n.reward,
            termination=n.termination, steps_count=n.steps_count,
            usage=UsageTotals.model_validate(n.usage or {}), error=n.error, label=n.label,
        )


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
    index: int
    kind: Literal["thought", "action"]
    raw: str
    text: str
    observation: str
    reward: float
    done: bool
    error: str | None
    extra: dict[str, Any] | None

    @classmethod
    def from_row(cls, s: StepRow) -> StepPublic:
        return cls(index=s.index, kind=s.kind, raw=s.raw, text=s.text,
                   observation=s.observation, reward=s.reward, done=s.done, error=s.error,
                   extra=s.extra)


class LLMCallPublic(BaseModel):
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

    @classmethod
    def from_row(cls, c: LLMCallRow) -> LLMCallPublic:
        return cls(
            id=c.id, node_id=c.node_id, role=c.role, model=c.model,
            simulated=c.simulated, prompt=c.prompt,
            messages=(c.messages or {}).get("messages"), stop=(c.stop or {}).get("stop") or [],
            completion=c.completion, prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens, usage_estimated=c.usage_estimated,
            latency_s=c.latency_s, cost_usd=c.cost_usd, monitor=c.monitor, retries=c.retries,
            attempt=c.attempt, created_at=c.created_at,
        )


class NodeDetail(NodePublic):
    task_id: str
    plan: Plan | None = Field(description="The planner's output: raw text and parsed steps and "
                              "logic expression (null for nodes that were not decomposed).")
    context_in: str | None
    context_out: str | None
    children: list[int] = Field(description="Ids of the child nodes, in order.")
    steps: list[StepPublic] = Field(description="The executor trajectory of this node.")
    llm_calls: list[LLMCallPublic]


# -- events ---------------------------------------------------------------------------------
EventType = Literal["node.created", "node.updated", "step", "llm_call", "task.finished"]


class EventPublic(BaseModel):
    seq: int = Field(description="Per-task, gap-free, from 1.")
    type: EventType
    created_at: datetime
    data: dict[str, Any] = Field(description='node.created / node.updated: {"node": Node}; '
                                 'step: {"step": Step}; llm_call: {"call": LLMCall} (prompt and '
                                 'messages null: see the node detail); '
                                 'task.finished: {"status", "result", "error"}')


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


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str] = Field(examples=[{"database": "ok", "dispatcher": "ok"}])


TreeNode.model_rebuild()
