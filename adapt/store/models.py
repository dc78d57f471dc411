"""Database schema: SQLAlchemy 2.0 typed models. Alembic (``migrations/``) owns the schema.

The task row is the source of truth for task state; it also carries the lease (``attempt``,
``lease_owner``, ``lease_expires_at``, ``heartbeat_at``) and the event sequence counter
(``last_seq``). Nodes, steps and LLM calls are keyed by ``(task_id, engine id)``, so a resumed
attempt that replays the same events overwrites nothing it should not.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    event,
    select,
    text,
)
from sqlalchemy import false as sa_false
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column
from sqlalchemy.orm.attributes import set_committed_value

# the engine's vocabulary (defined there once), re-exported for older importers
from adapt.engine.tree import FINAL_STATUSES as FINAL_STATUSES
from adapt.engine.tree import TASK_STATUSES as TASK_STATUSES
from adapt.engine.tree import UsageTotals
from adapt.store.elided import (
    RAW_CALL,
    plan_call,
    read_monitor,
    read_request_model,
    read_text,
    stored_monitor,
    stored_request_model,
    stored_text,
    whole_plan,
)

JSONType = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("tenant", "idempotency_key", name="uq_tasks_tenant_idempotency_key"),
        Index("ix_tasks_tenant_created", "tenant", "created_at", "id"),
        Index("ix_tasks_status_lease", "status", "lease_expires_at"),
        # the list filters, newest first, with the cursor's row comparison (0015)
        Index("ix_tasks_tenant_environment", "tenant", "environment", "created_at", "id"),
        Index("ix_tasks_tenant_strategy", "tenant", "strategy", "created_at", "id"),
        Index("ix_tasks_tenant_status", "tenant", "status", "created_at", "id"),
        # the tasks /metrics still aggregates row by row (adapt.store.metrics): few at any size;
        # each predicate as SQLAlchemy writes ``~Task.metrics_folded`` there, so both use it
        Index("ix_tasks_metrics_live", "status", postgresql_where=text("NOT metrics_folded"),
              sqlite_where=text("metrics_folded = 0")),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    #: (no index of its own since 0021: every index above starts with it)
    tenant: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(32), default="queued")
    environment: Mapped[str] = mapped_column(String(128))
    environment_config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    goal: Mapped[str | None] = mapped_column(Text)  # as requested (None: the environment's)
    resolved_goal: Mapped[str | None] = mapped_column(Text)  # what the engine ran
    strategy: Mapped[str] = mapped_column(String(64))
    #: ``default`` or ``paper`` (RunConfig.profile)
    profile: Mapped[str] = mapped_column(String(16), default="default", server_default="default")
    d_max: Mapped[int] = mapped_column(Integer)
    run_config: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    executor_model: Mapped[str] = mapped_column(Text)
    planner_model: Mapped[str] = mapped_column(Text)
    executor_simulated: Mapped[bool] = mapped_column(Boolean, default=False)
    planner_simulated: Mapped[bool] = mapped_column(Boolean, default=False)

    success: Mapped[bool | None] = mapped_column(Boolean)
    reward: Mapped[float | None] = mapped_column(Float)
    llm_calls: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float | None] = mapped_column(Float, default=0.0)
    nodes_count: Mapped[int] = mapped_column(Integer, default=0)
    max_depth: Mapped[int] = mapped_column(Integer, default=0)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # TaskResult JSON
    error: Mapped[str | None] = mapped_column(Text)

    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_hash: Mapped[str | None] = mapped_column(String(64))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)

    attempt: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    #: the worker that runs the current attempt or ran the last one (kept once finished)
    worker: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    #: its figures are in the ``/metrics`` running totals (``adapt.store.metrics``)
    metrics_folded: Mapped[bool] = mapped_column(Boolean, default=False,
                                                 server_default=sa_false())

    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    #: a fork (``POST /tasks/{id}/fork``): the task and node it was forked from, and how many
    #: of that task's recorded calls its first attempt replays (the history before the node)
    forked_from_task: Mapped[str | None] = mapped_column(String(32))
    forked_from_node: Mapped[int | None] = mapped_column(Integer)
    fork_calls: Mapped[int | None] = mapped_column(Integer)

    # what the row says, read as such by the API's schemas (``from_attributes``)
    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def forked_from(self) -> dict[str, Any] | None:
        if self.forked_from_task is None:
            return None
        return {"task_id": self.forked_from_task, "node_id": self.forked_from_node}

    @property
    def simulated(self) -> bool:
        """Whether the executor or the planner is simulated."""
        return bool(self.executor_simulated or self.planner_simulated)

    @property
    def usage(self) -> UsageTotals:
        return UsageTotals(llm_calls=self.llm_calls, prompt_tokens=self.prompt_tokens,
                           completion_tokens=self.completion_tokens, cost_usd=self.cost_usd)

    @property
    def models(self) -> dict[str, dict[str, Any]]:
        return {"executor": {"model": self.executor_model, "simulated": self.executor_simulated},
                "planner": {"model": self.planner_model, "simulated": self.planner_simulated}}



#: the tasks table itself, for Core statements (archive rows; the claim, whose UPDATE on the
#: table skips the ORM's preparation of a bulk UPDATE: 0.85 -> 0.55 ms of CPU per claim)
TASK_TABLE: Table = Task.__table__  # type: ignore[assignment]

class NodeRow(Base):
    __tablename__ = "nodes"

    task_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    parent_id: Mapped[int | None] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer, default=0)
    depth: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    goal: Mapped[str] = mapped_column(Text)
    logic: Mapped[str | None] = mapped_column(String(8))
    #: 32 since migration 0016 (``awaiting_approval``); SQLite keeps the declared 16, which it
    #: does not enforce (widening it there would copy the table)
    status: Mapped[str] = mapped_column(String(32).with_variant(String(16), "sqlite"))
    executor_success: Mapped[bool | None] = mapped_column(Boolean)
    self_assessed: Mapped[bool | None] = mapped_column(Boolean)
    claim: Mapped[bool | None] = mapped_column(Boolean)
    verdict: Mapped[str | None] = mapped_column(String(16))
    evidence: Mapped[str | None] = mapped_column(Text)
    success: Mapped[bool | None] = mapped_column(Boolean)
    reward: Mapped[float | None] = mapped_column(Float)
    termination: Mapped[str | None] = mapped_column(String(32))
    #: why the node was not decomposed or not run (``Node.reason``)
    reason: Mapped[str | None] = mapped_column(Text)
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    context_in: Mapped[str | None] = mapped_column(Text)
    context_out: Mapped[str | None] = mapped_column(Text)
    steps_count: Mapped[int] = mapped_column(Integer, default=0)
    usage: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    label: Mapped[str | None] = mapped_column(String(255))
    #: the library entry a reused node replayed, and its origin (``Node.reused``)
    reused: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class StepRow(Base):
    __tablename__ = "steps"
    __table_args__ = (
        ForeignKeyConstraint(["task_id", "node_id"], ["nodes.task_id", "nodes.id"],
                             ondelete="CASCADE"),
    )

    task_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    node_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    index: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(16))
    raw: Mapped[str] = mapped_column(Text)
    #: NULL when it equals ``raw`` (0021): a loaded row has it whole, a query of columns reads
    #: ``adapt.store.elided.step_text``
    text: Mapped[str] = mapped_column(Text, nullable=True)
    observation: Mapped[str] = mapped_column(Text)
    reward: Mapped[float] = mapped_column(Float, default=0.0)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSONType)  # e.g. visited states


class LLMCallRow(Base):
    __tablename__ = "llm_calls"
    __table_args__ = (Index("ix_llm_calls_task_node", "task_id", "node_id"),)

    task_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    node_id: Mapped[int | None] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(Text)
    #: the model asked for (``model``: the one the response named); None before 0012.
    #: Stored ``''`` when it equals ``model`` (0021): a loaded row has it whole, a query of
    #: columns reads ``adapt.store.elided.call_request_model``
    request_model: Mapped[str | None] = mapped_column(Text)
    simulated: Mapped[bool] = mapped_column(Boolean, default=False)
    #: the prompt, inline: rows written before prompts were stored as blocks (0010) only
    prompt: Mapped[str | None] = mapped_column(Text)
    messages: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)  # likewise
    #: the last block of the call's prompt in ``prompt_blocks`` (``adapt.store.prompts``);
    #: None when prompts are not stored. The foreign key makes a block that a call is being
    #: written against impossible to delete meanwhile (0013; ``adapt.store.prompts``' GC)
    prompt_ref: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("prompt_blocks.hash", name="fk_llm_calls_prompt_ref"), index=True)
    #: sent as chat messages (else as one prompt): the GenAI operation, ``chat`` or
    #: ``text_completion``, without reading the prompt
    chat: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    stop: Mapped[list[str] | None] = mapped_column(JSONType)  # stop sequences
    request_fingerprint: Mapped[str] = mapped_column(String(64))
    response: Mapped[dict[str, Any]] = mapped_column(JSONType)  # ChatResponse JSON, for replay
    completion: Mapped[str] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    usage_estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    latency_s: Mapped[float] = mapped_column(Float, default=0.0)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    #: the decoding monitor's record: validations, violations, corrections, what it fixed
    #: (``[]``: a check that found nothing, since 0021: a loaded row has it whole)
    monitor: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    #: provider errors (429/5xx/timeouts) retried before this call was answered
    retries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def tool_calls(self) -> list[dict[str, Any]] | None:
        """The tools the model called (kept in ``response``: ``adapt.store.responses``)."""
        calls = (self.response or {}).get("tool_calls")
        return calls if isinstance(calls, list) and calls else None


# -- values stored once (``adapt.store.elided``): loaded whole, written through the ORM whole --
#: the completion of the call a stored plan names (``adapt.store.elided.plan_call``): loaded
#: with the node (one index lookup, only for a plan that names a call), so that a loaded node
#: has its plan whole
NodeRow.plan_raw = column_property(
    select(LLMCallRow.completion)
    .where(LLMCallRow.task_id == NodeRow.task_id,
           LLMCallRow.id == NodeRow.plan[RAW_CALL].as_integer())
    .correlate_except(LLMCallRow).scalar_subquery())


@event.listens_for(NodeRow, "load")
@event.listens_for(NodeRow, "refresh")
def _whole_node(row: NodeRow, *_: Any) -> None:
    """A loaded node has its whole plan."""
    loaded = row.__dict__
    raw = loaded.get("plan_raw")
    if raw is not None and plan_call(loaded.get("plan")) is not None:
        set_committed_value(row, "plan", whole_plan(loaded["plan"], raw))


@event.listens_for(StepRow, "load")
@event.listens_for(StepRow, "refresh")
def _whole_step(row: StepRow, *_: Any) -> None:
    """A loaded step has its whole text; set as loaded, not as a change."""
    loaded = row.__dict__
    if loaded.get("text", "") is None and "raw" in loaded:
        set_committed_value(row, "text", read_text(None, loaded["raw"]))


@event.listens_for(LLMCallRow, "load")
@event.listens_for(LLMCallRow, "refresh")
def _whole_call(row: LLMCallRow, *_: Any) -> None:
    """A loaded call has its whole request model."""
    loaded = row.__dict__
    if "request_model" in loaded and "model" in loaded:
        set_committed_value(row, "request_model",
                            read_request_model(loaded["request_model"], loaded["model"]))
    if "monitor" in loaded:
        set_committed_value(row, "monitor", read_monitor(loaded["monitor"]))


@event.listens_for(StepRow, "before_insert")
@event.listens_for(StepRow, "before_update")
def _store_step(_mapper: Any, _connection: Any, row: StepRow) -> None:
    """A step written through the ORM is stored as the sink stores it (and stays whole)."""
    if "text" in row.__dict__ and "raw" in row.__dict__:
        row.text = stored_text(row.text, row.raw)  # type: ignore[assignment]


@event.listens_for(LLMCallRow, "before_insert")
@event.listens_for(LLMCallRow, "before_update")
def _store_call(_mapper: Any, _connection: Any, row: LLMCallRow) -> None:
    if "model" in row.__dict__:
        row.request_model = stored_request_model(row.__dict__.get("request_model"), row.model)
    if "monitor" in row.__dict__:
        row.monitor = stored_monitor(row.monitor)


@event.listens_for(StepRow, "after_insert")
@event.listens_for(StepRow, "after_update")
def _stored_step(_mapper: Any, _connection: Any, row: StepRow) -> None:
    _whole_step(row)


@event.listens_for(LLMCallRow, "after_insert")
@event.listens_for(LLMCallRow, "after_update")
def _stored_call(_mapper: Any, _connection: Any, row: LLMCallRow) -> None:
    _whole_call(row)


class PromptBlock(Base):
    """A piece of a prompt, stored once: addressed by the hash of (``parent``, ``text``); a
    call's prompt is the chain that ends at its ``prompt_ref`` (``adapt.store.prompts``).
    Blocks are shared by every task (and tenant) whose prompts hold them; a block that no call's
    chain holds any more is deleted with the last task that used it."""

    __tablename__ = "prompt_blocks"

    hash: Mapped[str] = mapped_column(String(32), primary_key=True)
    parent: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("prompt_blocks.hash", name="fk_prompt_blocks_parent"), index=True)
    text: Mapped[str] = mapped_column(Text)


class EventRow(Base):
    """Append-only event log; ``seq`` is per task and gap-free. Payloads are compact (they name
    the rows of other tables, and a node update holds what changed), and a row may hold several
    events (``span``): read events through ``adapt.store.event_log.read_events``."""

    __tablename__ = "events"
    __table_args__ = (
        # a node's earlier events, to rebuild its snapshot before a page of events
        Index("ix_events_task_node", "task_id", "node_id", "seq",
              postgresql_where=text("node_id IS NOT NULL"),
              sqlite_where=text("node_id IS NOT NULL")),
    )

    task_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    type: Mapped[str] = mapped_column(String(32))
    #: the event's payload; NULL in a row of several events (``span``), whose entries are
    #: ``packed``
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    ordinal: Mapped[int | None] = mapped_column(Integer)  # engine emission index; None: service
    #: the node of a node event (``node.created`` / ``node.updated``), else None; in a row
    #: of several events, the one node its node events are about
    node_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: how many consecutive events the row holds (``seq`` and ``ordinal`` are its first's;
    #: its events are then ``packed``: ``adapt.store.event_log.group``)
    span: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    #: the entries of a row of several events, compressed (``adapt.store.packing``)
    packed: Mapped[bytes | None] = mapped_column(LargeBinary)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128), index=True)
    name: Mapped[str | None] = mapped_column(String(255))
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class WorkerRow(Base):
    """A live worker process (Celery worker or embedded runner), kept fresh by its heartbeat.
    A row whose ``expires_at`` passed belongs to a worker that died without saying goodbye."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)  # the lease owner id
    queue: Mapped[str] = mapped_column(String(255), index=True)  # "embedded" for the runner
    hostname: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    running: Mapped[int] = mapped_column(Integer, default=0)  # tasks in flight
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Counter(Base):
    """A fleet-wide counter that processes add to (``/metrics`` reports it), e.g. the trace spans
    workers dropped."""

    __tablename__ = "counters"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(BigInteger, default=0)


class MetricsRollup(Base):
    """The ``/metrics`` figures of every folded task (``tasks.metrics_folded``) as one JSON
    document (``adapt.store.metrics``): a scrape adds the few unfolded tasks to it."""

    __tablename__ = "metrics_rollup"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class WebhookEndpoint(Base):
    """Where a tenant's (``task_id`` None) or one task's events are sent, with the signing
    secret (shown once, when it is created; kept because every delivery is signed with it)."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128), index=True)
    #: set: this endpoint is one task's ``webhook`` (it sees that task's events only)
    task_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(JSONType)
    secret: Mapped[str] = mapped_column(String(128))
    description: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


DELIVERY_STATUSES = ("pending", "delivered", "failed")


class WebhookDelivery(Base):
    """One event for one endpoint, and every attempt to send it. The id is the Standard
    Webhooks message id, derived from (task, event, endpoint): an event replayed by a resumed
    attempt maps to the same row, so it is never recorded or sent twice."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_task", "task_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("tasks.id", ondelete="CASCADE"))
    endpoint_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), index=True)
    event_type: Mapped[str] = mapped_column(String(32))
    #: what identifies the event within the task (``ordinal:57``: the engine's 57th event)
    event_key: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: a sender holds the row until then (another process may send it after)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    locked_by: Mapped[str | None] = mapped_column(String(255))
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    #: one entry per attempt: {"at", "status_code", "error", "duration_ms"}
    log: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ApprovalRow(Base):
    """One point where a task waits for a person (``adapt.engine.approvals``), and the
    decision once made, with who made it (the API key's id and tenant) and what changed. The
    request is named in the run by ``(node_id, kind, number)``: a replay meets it again there."""

    __tablename__ = "approvals"
    __table_args__ = (
        UniqueConstraint("task_id", "node_id", "kind", "number", name="uq_approvals_point"),
        Index("ix_approvals_task_status", "task_id", "status"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    task_id: Mapped[str] = mapped_column(String(32), ForeignKey("tasks.id", ondelete="CASCADE"))
    node_id: Mapped[int] = mapped_column(Integer)
    #: ``plan`` or ``action``
    kind: Mapped[str] = mapped_column(String(16))
    number: Mapped[int] = mapped_column(Integer, default=1)
    proposal: Mapped[dict[str, Any]] = mapped_column(JSONType)
    #: ``pending``, then ``approved``, ``rejected`` or ``edited`` (or ``expired``: the deadline
    #: passed and the task failed; ``withdrawn``: the task ended before anyone decided)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    reason: Mapped[str | None] = mapped_column(Text)
    #: the changed proposal of an edit
    edited: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    #: what the decision changed (an edit: the fields and their old and new values)
    changes: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    #: the API key that decided (None: the API ran open) and its tenant
    decided_by: Mapped[str | None] = mapped_column(String(64))
    decided_tenant: Mapped[str | None] = mapped_column(String(128))
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    #: the decision's number among the task's decisions (1, 2, ...), taken under the task
    #: row's lock as it is stored, so it follows the order decisions became visible (not
    #: ``decided_at``); sibling nodes waiting at the same time go on in this order (migration
    #: 0018; None: decided before it)
    decided_seq: Mapped[int | None] = mapped_column(Integer)
    #: when nobody decided by then, ``approval.on_deadline`` decides (None: no deadline)
    deadline_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)


class LibraryEntry(Base):
    """A verified sub-goal solution in a tenant's experience library (``adapt.store.library``):
    for an environment and a normalised goal, the actions that solved it (or, kind ``plan``,
    the decomposition that worked). Entries are never
    changed but for their counts; a dropped one (``dropped_at``) is kept so that a task
    resumed later finds what its first attempt found."""

    __tablename__ = "library_entries"
    __table_args__ = (
        Index("ix_library_entries_lookup", "tenant", "environment", "goal_key"),
        Index("ix_library_entries_tenant_id", "tenant", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(128))
    environment: Mapped[str] = mapped_column(String(128))
    goal: Mapped[str] = mapped_column(Text)
    goal_key: Mapped[str] = mapped_column(Text)
    #: ``skill``: ``actions`` are replayed; ``plan``: ``actions`` are a decomposition's
    #: steps and ``logic`` its execution order (``reuse.plans``)
    kind: Mapped[str] = mapped_column(String(16), default="skill", server_default="skill")
    actions: Mapped[list[str]] = mapped_column(JSONType)
    logic: Mapped[str | None] = mapped_column(Text)
    #: where it was learned: ``{"task": id, "node": id}``; an imported entry's says so
    origin: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    model: Mapped[str | None] = mapped_column(Text)
    #: found by a simulated model
    simulated: Mapped[bool] = mapped_column(Boolean, default=False)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    #: failed replays since the last use; at ``DROP_AFTER`` the entry is dropped
    failure_streak: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    dropped_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
