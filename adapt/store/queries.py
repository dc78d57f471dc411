"""Read queries of the API: tasks (tenant-scoped, cursor-paginated), trees, nodes, events and
the aggregates behind ``/metrics``.

Every function issues a fixed number of statements whatever the data size (the tree is one
nodes query; the caller nests it).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Float, Select, and_, case, cast, func, select, true, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.tree import FINAL_STATUSES, TASK_STATUSES
from adapt.errors import InvalidCursor as InvalidCursor
from adapt.store.models import LLMCallRow, NodeRow, StepRow, Task
from adapt.store.workers import live_workers

#: upper bounds (seconds) of the LLM call latency histogram
LATENCY_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: upper bounds (seconds) of the task wall-time histogram
WALL_BUCKETS: tuple[float, ...] = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)


# -- tasks ----------------------------------------------------------------------------------
async def get_task(session: AsyncSession, tenant: str, task_id: str) -> Task | None:
    """The task if it exists and belongs to ``tenant`` (else None: other tenants' ids are
    indistinguishable from unknown ones)."""
    if not task_id or len(task_id) > 32:
        return None
    stmt = (
        select(Task)
        .where(Task.id == task_id, Task.tenant == tenant)
        .execution_options(populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


def encode_cursor(created_at: datetime, task_id: str) -> str:
    raw = json.dumps([created_at.isoformat(), task_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *, start: str = "the newest task") -> tuple[datetime, str]:
    """Inverse of :func:`encode_cursor`; ``InvalidCursor`` for anything else (its message
    says that omitting the cursor starts from ``start``)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        stamp, task_id = value
        created_at = datetime.fromisoformat(stamp)
        if not isinstance(task_id, str) or created_at.tzinfo is None:
            raise ValueError("bad cursor")
    except (ValueError, TypeError, UnicodeError, binascii.Error):
        raise InvalidCursor(
            "invalid cursor: pass the next_cursor value of a previous page unchanged, or omit "
            f"it to start from {start}"
        ) from None
    return created_at, task_id


@dataclass
class TaskPage:
    items: list[Task]
    next_cursor: str | None


def list_tasks_statement(
    tenant: str,
    *,
    status: str | None = None,
    environment: str | None = None,
    strategy: str | None = None,
    cursor: str | None = None,
    limit: int = 20,
    id_prefix: str | None = None,
) -> Select[Task]:
    """The statement of :func:`list_tasks` (``limit + 1`` rows, to tell the last page)."""
    after = decode_cursor(cursor) if cursor else None
    stmt = select(Task).where(Task.tenant == tenant)
    if id_prefix:
        stmt = stmt.where(Task.id.startswith(id_prefix, autoescape=True))
    if status is not None:
        stmt = stmt.where(Task.status == status)
    if environment is not None:
        stmt = stmt.where(Task.environment == environment)
    if strategy is not None:
        stmt = stmt.where(Task.strategy == strategy)
    if after is not None:
        # a row comparison: an index condition on (tenant[, filter], created_at, id) at any
        # depth, where ``created_at < c OR (created_at = c AND id < i)`` filters row by row
        # (SQLite >= 3.15 has row values too)
        stmt = stmt.where(tuple_(Task.created_at, Task.id) < tuple_(*after))
    return stmt.order_by(Task.created_at.desc(), Task.id.desc()).limit(limit + 1)


async def list_tasks(
    session: AsyncSession,
    tenant: str,
    *,
    status: str | None = None,
    environment: str | None = None,
    strategy: str | None = None,
    cursor: str | None = None,
    limit: int = 20,
    id_prefix: str | None = None,
) -> TaskPage:
    """Newest first; ``next_cursor`` is None on the last page. ``id_prefix``: only tasks
    whose id starts with it (hex digits, checked by the caller)."""
    stmt = list_tasks_statement(tenant, status=status, environment=environment,
                                strategy=strategy, cursor=cursor, limit=limit,
                                id_prefix=id_prefix)
    rows = list((await session.execute(stmt)).scalars().all())
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
    return TaskPage(rows, next_cursor)


# -- tree, nodes ----------------------------------------------------------------------------
async def task_nodes(session: AsyncSession, task_id: str) -> Sequence[NodeRow]:
    """Every node of the task in one statement, ordered by (parent, position, id)."""
    stmt = (
        select(NodeRow)
        .where(NodeRow.task_id == task_id)
        .order_by(NodeRow.parent_id, NodeRow.position, NodeRow.id)
    )
    return (await session.execute(stmt)).scalars().all()


#: the columns of a tree node (``api.schemas.TreeNode`` without ``children``), in its order
TREE_COLUMNS = ("id", "parent_id", "position", "kind", "goal", "depth", "logic", "status",
                "executor_success", "self_assessed", "claim", "verdict", "evidence", "success",
                "reward", "termination", "steps_count", "usage", "error", "label", "reason",
                "reused")
_USAGE = (("llm_calls", 0), ("prompt_tokens", 0), ("completion_tokens", 0), ("cost_usd", 0.0))


async def tree_rows(session: AsyncSession, task_id: str) -> Sequence[Any]:
    """Every node of the task as a row of ``TREE_COLUMNS``, ordered by (parent, position,
    id): one statement, no ORM objects."""
    stmt = (
        select(*(getattr(NodeRow, c) for c in TREE_COLUMNS))
        .where(NodeRow.task_id == task_id)
        .order_by(NodeRow.parent_id, NodeRow.position, NodeRow.id)
    )
    return (await session.execute(stmt)).all()


def tree_dicts(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """:func:`tree_rows` as plain dicts (``usage`` complete, an empty ``children`` list)."""
    out = []
    for row in rows:
        node = dict(zip(TREE_COLUMNS, row, strict=True))
        usage = node["usage"] or {}
        node["usage"] = {k: usage.get(k, default) for k, default in _USAGE}
        node["children"] = []
        out.append(node)
    return out


async def tree_nodes(session: AsyncSession, task_id: str) -> list[dict[str, Any]]:
    """Every node of the task as a plain dict (:func:`tree_rows`, :func:`tree_dicts`)."""
    return tree_dicts(await tree_rows(session, task_id))


async def get_node(session: AsyncSession, task_id: str, node_id: int) -> NodeRow | None:
    stmt = select(NodeRow).where(NodeRow.task_id == task_id, NodeRow.id == node_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def child_ids(session: AsyncSession, task_id: str, node_id: int) -> list[int]:
    stmt = (
        select(NodeRow.id)
        .where(NodeRow.task_id == task_id, NodeRow.parent_id == node_id)
        .order_by(NodeRow.position, NodeRow.id)
    )
    return [int(i) for i in (await session.execute(stmt)).scalars().all()]


async def node_steps(session: AsyncSession, task_id: str, node_id: int) -> Sequence[StepRow]:
    stmt = (
        select(StepRow)
        .where(StepRow.task_id == task_id, StepRow.node_id == node_id)
        .order_by(StepRow.index)
    )
    return (await session.execute(stmt)).scalars().all()


async def node_calls(session: AsyncSession, task_id: str, node_id: int) -> Sequence[LLMCallRow]:
    stmt = (
        select(LLMCallRow)
        .where(LLMCallRow.task_id == task_id, LLMCallRow.node_id == node_id)
        .order_by(LLMCallRow.id)
    )
    return (await session.execute(stmt)).scalars().all()


# -- events ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskProgress:
    status: str
    last_seq: int

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES


async def task_progress(session: AsyncSession, task_id: str) -> TaskProgress | None:
    """Status and last event number: the cheap query an event stream polls."""
    row = (await session.execute(
        select(Task.status, Task.last_seq).where(Task.id == task_id)
    )).one_or_none()
    return None if row is None else TaskProgress(str(row.status), int(row.last_seq))


# -- metrics --------------------------------------------------------------------------------
@dataclass
class Histogram:
    buckets: list[tuple[float, int]]  # (upper bound, cumulative count), +Inf excluded
    count: int
    total: float


@dataclass
class MetricsSnapshot:
    tasks_by_status: dict[str, int] = field(default_factory=dict)
    cancel_requested: int = 0
    nodes: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    llm_retries: int = 0  # transient provider errors retried before a recorded answer
    live_workers: int = 0
    llm_latency: Histogram = field(default_factory=lambda: Histogram([], 0, 0.0))
    task_wall: Histogram = field(default_factory=lambda: Histogram([], 0, 0.0))


def _le_counts(column: Any, bounds: Sequence[float]) -> list[Any]:
    return [func.coalesce(func.sum(case((column <= b, 1), else_=0)), 0) for b in bounds]


def _wall_seconds(dialect: str) -> Any:
    if dialect == "postgresql":
        return func.extract("epoch", Task.finished_at - Task.started_at)
    return (func.julianday(Task.finished_at) - func.julianday(Task.started_at)) * 86400.0


def in_scope(task_id: Any, scope: Any | None) -> Any:
    """``task_id IN (SELECT id FROM tasks WHERE scope)``, or true when ``scope`` is None."""
    return true() if scope is None else task_id.in_(select(Task.id).where(scope))


async def metrics_snapshot(session: AsyncSession, scope: Any | None = None) -> MetricsSnapshot:
    """Aggregates of the tasks ``scope`` selects (a condition on ``Task``; None: every task of
    every tenant, with the live workers) and of their nodes and calls, four statements (five
    with the workers). ``adapt.store.metrics`` adds the running totals of the folded tasks to
    those of the others."""
    snap = MetricsSnapshot(tasks_by_status=dict.fromkeys(TASK_STATUSES, 0))
    tasks = true() if scope is None else scope
    rows = (await session.execute(
        select(Task.status, func.count(), func.coalesce(
            func.sum(case((Task.cancel_requested, 1), else_=0)), 0))
        .where(tasks).group_by(Task.status)
    )).all()
    for status, count, cancels in rows:
        snap.tasks_by_status[str(status)] = int(count)
        snap.cancel_requested += int(cancels)

    snap.nodes = int(await session.scalar(
        select(func.count()).select_from(NodeRow).where(in_scope(NodeRow.task_id, scope))) or 0)

    latency = cast(LLMCallRow.latency_s, Float)
    calls = (await session.execute(select(
        func.count(),
        func.coalesce(func.sum(LLMCallRow.prompt_tokens), 0),
        func.coalesce(func.sum(LLMCallRow.completion_tokens), 0),
        func.coalesce(func.sum(LLMCallRow.cost_usd), 0.0),
        func.coalesce(func.sum(latency), 0.0),
        func.coalesce(func.sum(LLMCallRow.retries), 0),
        *_le_counts(latency, LATENCY_BUCKETS),
    ).select_from(LLMCallRow).where(in_scope(LLMCallRow.task_id, scope)))).one()
    snap.llm_calls, snap.prompt_tokens, snap.completion_tokens = (
        int(calls[0]), int(calls[1]), int(calls[2]))
    snap.cost_usd = float(calls[3])
    snap.llm_retries = int(calls[5])
    if scope is None:  # a part's figures leave the live workers to the caller
        snap.live_workers = await live_workers(session)
    snap.llm_latency = Histogram(
        [(b, int(n)) for b, n in zip(LATENCY_BUCKETS, calls[6:], strict=True)],
        snap.llm_calls, float(calls[4]),
    )

    wall = cast(_wall_seconds(session.get_bind().dialect.name), Float)
    timed = and_(Task.started_at.is_not(None), Task.finished_at.is_not(None))
    walls = (await session.execute(
        select(func.count(), func.coalesce(func.sum(wall), 0.0), *_le_counts(wall, WALL_BUCKETS))
        .where(timed, tasks)
    )).one()
    snap.task_wall = Histogram(
        [(b, int(n)) for b, n in zip(WALL_BUCKETS, walls[2:], strict=True)],
        int(walls[0]), float(walls[1]),
    )
    return snap
