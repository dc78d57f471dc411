"""The decomposition tree: nodes, executor steps, LLM calls, and the task result.

Pydantic models with a ``kind`` Literal, so one adapter (``model_dump(mode="json")``) turns any
of them into JSON. The engine mutates its own copies and emits snapshots to sinks.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field

from adapt.envs.verdicts import Verdict

NodeKind = Literal["task", "group"]
LogicOp = Literal["and", "or"]
# The statuses, defined once: the store, the service and the API import them from here.
#: ``awaiting_approval``: stopped where the task asks a person (``RunConfig.approval``)
NodeStatus = Literal["pending", "running", "awaiting_approval", "succeeded", "failed",
                     "skipped", "cancelled"]
#: how a task ends (the engine's result, or the service's when it stops a task from outside)
FinalStatus = Literal["succeeded", "failed", "cancelled", "budget_exceeded", "error"]
#: a stored task's lifecycle: queued, running (a worker holds its lease), waiting (for an
#: approval: no lease, no worker), then final
TaskStatus = Literal["queued", "running", "waiting", FinalStatus]
NODE_STATUSES: tuple[str, ...] = get_args(NodeStatus)
#: a node's statuses once it has ended
FINAL_NODE_STATUSES: frozenset[str] = frozenset(NODE_STATUSES) - {
    "pending", "running", "awaiting_approval"}
FINAL_STATUSES: tuple[str, ...] = get_args(FinalStatus)
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
StepKind = Literal["thought", "action"]


class Termination(StrEnum):
    """Why an executor run ended (``Node.termination``), or what a node that was not executed
    holds instead. Stored and sent as its value."""

    #: the environment gave a reward > 0
    REWARD = "reward"
    #: the environment ended the episode without a reward
    DONE = "done"
    #: the executor said the task is completed (a final state said so, for StateFlow)
    COMPLETED = "completed"
    #: the executor said the task failed
    FAILED = "failed"
    #: ``executor.patience`` failed observations in a row
    PATIENCE = "patience"
    #: the step budget (``executor.max_steps``) was used up
    MAX_STEPS = "max_steps"
    #: StateFlow's turn limit was reached
    MAX_TURNS = "max_turns"
    #: the environment confirmed the goal (verification)
    VERIFIED = "verified"
    #: the environment refuted the executor's claim (verification)
    REFUTED = "refuted"
    #: StateAct's ``executor.repeat_limit``: the same step too many times in a row
    REPETITION = "repetition"
    #: a spec agent's answer the environment marked wrong
    INCORRECT = "incorrect"
    #: a spec agent answered, and nothing confirmed or refuted it
    ANSWERED = "answered"
    #: plan-and-execute's root: it holds the plan and was not executed
    PLANNED = "planned"
    #: a stored solution from the experience library was replayed and the environment
    #: confirmed the goal (no LLM call; ``Node.reused`` says where it came from)
    REUSED = "reused"


class UsageTotals(BaseModel):
    """LLM usage. ``cost_usd`` is ``None`` when any call's price is unknown."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int, completion_tokens: int, cost_usd: float | None) -> None:
        self.llm_calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        if self.cost_usd is not None and cost_usd is not None:
            self.cost_usd += cost_usd
        else:
            self.cost_usd = None


class MonitorTotals(BaseModel):
    """What the decoding monitor did: chunks validated, violations found, corrections made."""

    validations: int = 0
    violations: int = 0
    corrections: int = 0

    def add(self, record: dict[str, Any]) -> None:
        self.validations += int(record.get("validations", 0))
        self.violations += int(record.get("violations", 0))
        self.corrections += int(record.get("corrections", 0))


# -- logic expressions ----------------------------------------------------------------------
class StepRef(BaseModel):
    kind: Literal["step"] = "step"
    index: int = Field(ge=1, description="1-based step number, after renumbering")


class LogicGroup(BaseModel):
    kind: Literal["op"] = "op"
    op: LogicOp
    children: list[LogicExpr] = Field(min_length=1)


LogicExpr = Annotated[StepRef | LogicGroup, Field(discriminator="kind")]
LogicGroup.model_rebuild()


class Plan(BaseModel):
    raw: str
    steps: list[str]
    expression: LogicExpr | None = None
    expression_text: str = ""
    warnings: list[str] = Field(default_factory=list)
    #: the plan came from the experience library (``reuse.plans``): ``mode`` ``reuse`` (no
    #: planner call) or ``example`` (shown to the planner), the entry and where it was learned
    #: (``{"mode": "reuse", "entry": 3, "task": "...", "node": 5, "simulated": false}``);
    #: None: the planner's own
    reused: dict[str, Any] | None = None


# -- tree ---------------------------------------------------------------------------------------
class Node(BaseModel):
    kind: NodeKind = "task"
    id: int
    parent_id: int | None = None
    position: int = 0
    depth: int = 1
    goal: str
    logic: LogicOp | None = None
    status: NodeStatus = "pending"
    executor_success: bool | None = None
    self_assessed: bool | None = None
    #: the executor's own outcome (before verification); None: it made none (skipped/verified)
    claim: bool | None = None
    #: the environment's verdict on the goal: confirmed / refuted / unknown; None: not checked
    verdict: Verdict | None = None
    #: why (``holds 2 of 6 oak planks``)
    evidence: str | None = None
    success: bool | None = None
    reward: float | None = None
    #: a ``Termination`` value; a plain string here, so events stored before a value was added
    #: still read, and a client keeps working when one is added
    termination: str | None = None
    plan: Plan | None = None
    context_in: str | None = None
    context_out: str | None = None
    steps_count: int = 0
    usage: UsageTotals = Field(default_factory=UsageTotals)
    error: str | None = None
    label: str | None = None  # e.g. "trial 2" for strategies that run trials
    #: why the node ended without (more) decomposition or was not run, when its own executor
    #: run does not say: ``d_max reached (depth 3 of 3)``, ``skipped: an earlier OR
    #: alternative succeeded``, ``not run: budget exceeded ...``; None: nothing to explain
    reason: str | None = None
    #: the node was solved by replaying a stored solution (``reuse.skills``): the library
    #: entry and where it was learned, ``{"entry": 3, "task": "...", "node": 5,
    #: "simulated": false}``; None: not reused
    reused: dict[str, Any] | None = None


class Step(BaseModel):
    kind: StepKind
    node_id: int
    index: int = Field(ge=1)
    raw: str
    text: str
    observation: str
    reward: float = 0.0
    done: bool = False
    error: str | None = None
    extra: dict[str, Any] | None = None  # executor-specific: state fields, visited states, ...


class LLMCall(BaseModel):
    id: int
    node_id: int | None
    role: str
    model: str
    simulated: bool = False
    prompt: str | None = None
    #: chat messages: ``role`` and ``content``, and the tool fields a message has
    #: (``tool_calls``, ``tool_call_id``)
    messages: list[dict[str, Any]] | None = None
    #: the tools the call offered (OpenAI ``tools`` entries); None: none
    tools: list[dict[str, Any]] | None = None
    stop: list[str] = Field(default_factory=list)
    completion: str
    #: the tools the model called (``{"id", "name", "arguments"}``); None: none
    tool_calls: list[dict[str, Any]] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    latency_s: float = 0.0
    cost_usd: float | None = None
    monitor: dict[str, Any] | None = None  # the decoding monitor's record for this call
    retries: int = 0  # transient provider errors retried before the answer
    #: the model asked for (``model`` is the one the response names); None: calls stored
    #: before it was recorded
    request_model: str | None = None


class TaskResult(BaseModel):
    status: FinalStatus
    success: bool  # the controller's verdict; never true when the environment refutes the goal
    #: what the tree claimed before the final check (the root's success before it)
    claimed_success: bool | None = None
    #: the environment's verdict on the root goal at the end (None: verification found nothing)
    verdict: Verdict | None = None
    reward: float = 0.0
    goal: str
    strategy: str
    d_max: int
    #: the profile that ran (``default`` or ``paper``)
    profile: str = "default"
    usage: UsageTotals = Field(default_factory=UsageTotals)
    usage_by_role: dict[str, UsageTotals] = Field(default_factory=dict)
    monitor: MonitorTotals = Field(default_factory=MonitorTotals)
    nodes: int = 0
    max_depth: int = 0
    error: str | None = None
    budget_exceeded: str | None = None
    wall_seconds: float = 0.0
    #: planner-made task nodes the environment checked, and how many of them it could decide
    #: (confirmed or refuted): the share of checkable sub-goals is ``checkable / checked``
    checked_subgoals: int = 0
    checkable_subgoals: int = 0
