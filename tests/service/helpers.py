"""Helpers for service tests: insert task rows, read persisted trees."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig
from adapt.store.event_log import StoredEvent, read_events
from adapt.store.models import NodeRow, StepRow, Task


async def insert_task(
    sessions: async_sessionmaker[AsyncSession],
    *,
    environment: str = "textcraft",
    config: dict[str, Any] | None = None,
    model: str = "sim:textcraft?capability=1",
    run_config: RunConfig | None = None,
    tenant: str = "default",
) -> str:
    task_id = uuid.uuid4().hex
    rc = run_config or RunConfig(d_max=4)
    async with sessions.begin() as session:
        session.add(Task(
            id=task_id, tenant=tenant, status="queued", environment=environment,
            environment_config=config if config is not None else {"seed": 5},
            strategy=rc.strategy, d_max=rc.d_max, run_config=rc.model_dump(mode="json"),
            executor_model=model, planner_model=model, executor_simulated=True,
            planner_simulated=True,
        ))
    return task_id


async def persisted_tree(sessions: async_sessionmaker[AsyncSession], task_id: str) -> dict[str, Any]:
    """Nodes (as engine Node JSON) and steps, keyed by node id."""
    async with sessions() as session:
        nodes = (await session.execute(
            select(NodeRow).where(NodeRow.task_id == task_id).order_by(NodeRow.id))).scalars()
        steps = (await session.execute(
            select(StepRow).where(StepRow.task_id == task_id)
            .order_by(StepRow.node_id, StepRow.index))).scalars()
        out: dict[str, Any] = {"nodes": {}, "steps": {}}
        for n in nodes:
            d = {c.key: getattr(n, c.key) for c in NodeRow.__table__.columns}
            d.pop("task_id"), d.pop("updated_at")
            out["nodes"][n.id] = d
        for s in steps:
            d = {c.key: getattr(s, c.key) for c in StepRow.__table__.columns}
            d.pop("task_id")
            out["steps"].setdefault(s.node_id, []).append(d)
        return out


async def events(sessions: async_sessionmaker[AsyncSession], task_id: str) -> list[StoredEvent]:
    """The task's events, whole (as the API shows them)."""
    async with sessions() as session:
        return await read_events(session, task_id, 0, None)


async def task_row(sessions: async_sessionmaker[AsyncSession], task_id: str) -> Task:
    async with sessions() as session:
        task = await session.get(Task, task_id)
        assert task is not None
        return task
