"""adapt's environment protocol, version 1: the JSON documents a client and a server exchange.

Both sides use these models: the server of ``adapt env serve`` (:mod:`adapt.envserve`, whose
OpenAPI document is ``docs/remote-environments.openapi.json``) and the client
(:mod:`adapt.envs.remote.client`). Paths are under ``/v1``:

- ``GET /v1/environment``: what the environment is (:class:`EnvironmentMeta`);
- ``POST /v1/sessions`` (``config``): a new episode, its task observation and prompts
  (:class:`SessionCreated`);
- ``POST /v1/sessions/{id}/steps`` (``seq``, ``action``): one action (:class:`StepAnswer`);
- ``POST /v1/sessions/{id}/checkpoints`` and ``.../rollbacks``: undo a failed sub-task
  (optional: ``rolls_back``);
- ``POST /v1/sessions/{id}/task-observation`` (``goal``), ``.../verify`` (``goal``,
  ``since``) and ``.../tool-action`` (``name``, ``arguments``): questions that change nothing;
- ``DELETE /v1/sessions/{id}``: the end of the session.

Every request that changes a session (a step, a checkpoint, a rollback) carries the next
sequence number of the session (1, 2, ...). A request whose number the session already applied
is answered with the stored answer (``repeated: true``) and applied no second time, so a client
resends a request whose answer it lost without fear; a number past the next one is a 409.
Errors are problem details (``type`` ``urn:adapt:env-problem:<slug>``); a session unknown to
the server (it expired after ``idle_seconds``, or the server restarted) is a 404 of type
``session-not-found``, after which a client starts a new session and applies its actions again.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: the protocol version these models describe (the paths' ``/v1``)
PROTOCOL_VERSION = 1
PREFIX = "/v1"
#: problem types are this prefix plus a slug
PROBLEM_PREFIX = "urn:adapt:env-problem:"

#: longest action, goal or tool argument document a server must take (characters)
MAX_ACTION_CHARS = 65_536
MAX_GOAL_CHARS = 16_384

#: the problem slugs a client acts on
SESSION_NOT_FOUND = "session-not-found"
SEQUENCE_CONFLICT = "sequence-conflict"
INVALID_CONFIG = "invalid-config"
TOOL_CALL_ERROR = "tool-call-error"
TOO_MANY_SESSIONS = "too-many-sessions"


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ToolInfo(_Wire):
    """One action declared as a tool (``adapt.envs.tools.ToolSpec`` on the wire)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


class EnvironmentMeta(_Wire):
    """``GET /v1/environment``: the environment's class-level members and capabilities."""

    protocol: int = Field(default=PROTOCOL_VERSION, description="The protocol version.")
    name: str
    description: str = ""
    config_schema: dict[str, Any] = Field(
        default_factory=dict, description="JSON schema of a session's config.")
    default_max_steps: int = Field(default=20, gt=0)
    action_grammar: str = Field(default="", description="The valid actions, for people.")
    state_fields: list[str] = Field(
        default_factory=list, description="State the StateAct executor tracks.")
    success_reward: float | None = None
    final_action: str | None = None
    answer_action: str | None = None
    paper_profile: dict[str, Any] = Field(
        default_factory=dict, description="What profile 'paper' sets for this environment.")
    verifies: bool = Field(default=False, description="Sessions answer .../verify.")
    rolls_back: bool = Field(
        default=False, description="Sessions may take checkpoints and roll back to them.")
    declares_tools: bool = Field(default=False,
                                 description="Sessions declare their actions as tools.")


class SessionCreate(_Wire):
    config: dict[str, Any] = Field(default_factory=dict)


class SessionCreated(_Wire):
    """A new episode: what ``reset`` returns and what the engine asks of it without a step."""

    session: str
    observation: str
    goal: str
    #: the salient state (handed to later sub-tasks), ``None``: none
    state: str | None = None
    #: prompt templates by kind (``executor``, ``planner``, ...), for this session's config
    prompts: dict[str, str] = Field(default_factory=dict)
    prompt_variables: dict[str, str] = Field(default_factory=dict)
    #: failed sub-tasks are rolled back in this session (checkpoints/rollbacks)
    rolls_back: bool = False
    tools: list[ToolInfo] = Field(default_factory=list)
    #: seconds without a request after which the server forgets the session
    idle_seconds: float = 0.0


class StepRequest(_Wire):
    seq: int = Field(ge=1, description="The session's next sequence number (1 first).")
    action: str = Field(max_length=MAX_ACTION_CHARS)


class StepAnswer(_Wire):
    seq: int
    observation: str
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = Field(default_factory=dict)
    #: the observation is a failed action (the executor's patience rule counts it)
    failed: bool = False
    state: str | None = None
    #: this sequence number was applied before; this is the stored answer
    repeated: bool = False


class CheckpointRequest(_Wire):
    seq: int = Field(ge=1)


class RollbackRequest(_Wire):
    seq: int = Field(ge=1)
    #: the sequence number of the checkpoint to return to
    to: int = Field(ge=1)


class OperationAnswer(_Wire):
    seq: int
    state: str | None = None
    repeated: bool = False


class GoalRequest(_Wire):
    goal: str = Field(max_length=MAX_GOAL_CHARS)


class TaskObservation(_Wire):
    observation: str


class VerifyRequest(_Wire):
    goal: str = Field(max_length=MAX_GOAL_CHARS)
    #: the sequence number after which the goal's node started (its mark); null: none
    since: int | None = Field(default=None, ge=0)


class VerifyAnswer(_Wire):
    verdict: Literal["confirmed", "refuted", "unknown"]
    evidence: str = ""


class ToolActionRequest(_Wire):
    name: str = Field(max_length=64)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolActionAnswer(_Wire):
    action: str


class Problem(_Wire):
    """An error (RFC 9457)."""

    type: str = "about:blank"
    title: str = ""
    status: int = 500
    detail: str = ""
    errors: list[dict[str, Any]] | None = None


__all__ = [
    "INVALID_CONFIG", "MAX_ACTION_CHARS", "MAX_GOAL_CHARS", "PREFIX", "PROBLEM_PREFIX",
    "PROTOCOL_VERSION", "SEQUENCE_CONFLICT", "SESSION_NOT_FOUND", "TOOL_CALL_ERROR",
    "TOO_MANY_SESSIONS", "CheckpointRequest", "EnvironmentMeta", "GoalRequest",
    "OperationAnswer", "Problem", "RollbackRequest", "SessionCreate", "SessionCreated",
    "StepAnswer", "StepRequest", "TaskObservation", "ToolActionAnswer", "ToolActionRequest",
    "ToolInfo", "VerifyAnswer", "VerifyRequest",
]
