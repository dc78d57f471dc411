"""The tree family: ``NodePublic`` / ``TreeNode`` / ``TaskTree`` (``GET /tasks/{id}/tree``), and
``NodeDetail`` with its ``StepPublic`` and ``LLMCallPublic`` (``GET /tasks/{id}/nodes/{id}``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from adapt.engine.tree import NodeStatus, Plan, TaskStatus, UsageTotals
from api.schemas.common import FROM_ROWS


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
    reason: str | None = Field(default=None, description="Why the node was not decomposed, "
                               "or not run, when its own executor run does not say: 'not "
                               "decomposed: d_max reached (depth 3 of 3)', 'skipped: an "
                               "earlier OR alternative succeeded (node 4)', 'not run: budget "
                               "exceeded ...'.")
    reused: dict[str, Any] | None = Field(
        default=None, description="The node was solved by replaying a stored solution from "
        "the experience library (reuse.skills; termination 'reused', no LLM call): the "
        "library entry ('entry'), where it was learned ('task', 'node'; 'imported' for an "
        "imported entry) and whether a simulated model found it ('simulated'). null: not "
        "reused (docs/experience.md).", examples=[{"entry": 3, "task": "t_0a1b", "node": 5,
                                                  "simulated": False}])


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
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="The tools the call offered (OpenAI `tools` entries; the "
        "tools executor); null: none, or prompts are not stored.")
    stop: list[str]
    completion: str
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="The tools the model called: `id`, `name` and `arguments` "
        "(JSON text, as the model wrote it); null: none.")
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


TreeNode.model_rebuild()
