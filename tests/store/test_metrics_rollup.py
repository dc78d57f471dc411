"""``adapt.store.metrics``: the running totals /metrics reads equal the rows at every moment
(folding, resuming, deleting), and folded rows are not read again."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store import metrics, task_rows
from adapt.store.db import create_engine, session_factory
from adapt.store.models import LLMCallRow, NodeRow, Task, utcnow


async def add_task(sessions: async_sessionmaker[AsyncSession], task_id: str, status: str, *,
                   calls: int = 2, nodes: int = 2, model: str = "sim:a", cancel: bool = False,
                   age: float = 3600.0) -> None:
    """A task with ``nodes`` nodes and ``calls`` calls (distinct latencies and tokens), last
    touched ``age`` seconds ago."""
    then = utcnow() - timedelta(seconds=age)
    final = status in ("succeeded", "failed", "error", "cancelled")
    async with sessions.begin() as session:
        session.add(Task(
            id=task_id, tenant="acme", status=status, environment="textcraft", strategy="adapt",
            d_max=3, executor_model=model, planner_model=model, cancel_requested=cancel,
            created_at=then, updated_at=then,
            started_at=then - timedelta(seconds=7) if status != "queued" else None,
            finished_at=then if final else None))
        await session.flush()
        for n in range(1, nodes + 1):
            session.add(NodeRow(task_id=task_id, id=n, depth=1, kind="task", goal="g",
                                status="succeeded", updated_at=then))
        for c in range(1, calls + 1):
            session.add(LLMCallRow(
                task_id=task_id, id=c, node_id=1, role="executor", model=model,
                request_model=model, chat=c % 2 == 0, request_fingerprint="f", response={},
                completion="x", prompt_tokens=10 * c + len(task_id), completion_tokens=c,
                latency_s=0.03 * c, cost_usd=0.001 * c, retries=c % 2, created_at=then))
        # the ORM's onupdate would stamp now: keep the age asked for
        await session.flush()
        await session.execute(update(Task).where(Task.id == task_id).values(updated_at=then))


def rounded(figures: metrics.Figures) -> dict[str, Any]:
    def walk(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, 9)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    data = dict(walk(figures.to_json()))
    data["genai"].sort(key=lambda g: (g["operation"], g["model"]))
    return data


async def scrape(sessions: async_sessionmaker[AsyncSession], **options: Any) -> dict[str, Any]:
    async with sessions() as session:
        return rounded(await metrics.current(session, **options))


async def from_rows(sessions: async_sessionmaker[AsyncSession]) -> dict[str, Any]:
    """Every row aggregated, as /metrics did before the running totals."""
    async with sessions() as session:
        return rounded(await metrics.aggregate(session, Task.id.is_not(None)))


async def folded(sessions: async_sessionmaker[AsyncSession]) -> int:
    async with sessions() as session:
        return int(await session.scalar(
            select(func.count()).select_from(Task).where(Task.metrics_folded)) or 0)


async def test_a_scrape_equals_the_rows_while_finished_tasks_are_folded_in_batches(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    await add_task(sessions, "s1", "succeeded")
    await add_task(sessions, "f1", "failed", calls=3, model="sim:b", cancel=True)
    await add_task(sessions, "e1", "error", calls=1, nodes=1)
    await add_task(sessions, "r1", "running")
    await add_task(sessions, "q1", "queued", calls=0, nodes=0)
    rows = await from_rows(sessions)
    assert rows["snapshot"]["llm_calls"] == 8 and rows["snapshot"]["nodes"] == 7

    assert await scrape(sessions, batch=2, grace=0) == rows
    assert await folded(sessions) == 2
    assert await scrape(sessions, batch=2, grace=0) == rows
    assert await folded(sessions) == 3  # the running and the queued task are never folded

    # a task that finished just now: folded by the next scrape when there is no grace
    await add_task(sessions, "s2", "succeeded", calls=1, model="sim:c", age=0)
    rows = await from_rows(sessions)
    assert await scrape(sessions, grace=0) == rows
    assert await folded(sessions) == 4
    assert rows["snapshot"]["tasks_by_status"]["succeeded"] == 2
    assert {g["model"] for g in rows["genai"]} == {"sim:a", "sim:b", "sim:c"}


async def test_a_task_finished_moments_ago_waits_for_the_grace_period(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    await add_task(sessions, "s1", "succeeded", age=1.0)
    rows = await from_rows(sessions)
    assert await scrape(sessions) == rows
    assert await folded(sessions) == 0
    assert await scrape(sessions, grace=0.5) == rows
    assert await folded(sessions) == 1


async def test_folded_rows_are_not_read_again(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    await add_task(sessions, "s1", "succeeded")
    await add_task(sessions, "r1", "running")
    first = await scrape(sessions, grace=0)
    async with sessions.begin() as session:  # behind the store's back: the totals keep them
        await session.execute(delete(LLMCallRow).where(LLMCallRow.task_id.in_(["s1", "r1"])))
    again = await scrape(sessions, grace=0)
    assert again != await from_rows(sessions)
    # the folded task's two calls still count; the running task's two are gone
    assert again["snapshot"]["llm_calls"] == first["snapshot"]["llm_calls"] - 2 == 2


async def test_a_resumed_or_deleted_task_leaves_the_running_totals(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    await add_task(sessions, "s1", "succeeded")
    await add_task(sessions, "e1", "error", calls=3)
    await add_task(sessions, "f1", "failed", model="sim:b")
    await scrape(sessions, grace=0)
    assert await folded(sessions) == 3

    async with sessions() as session:
        task = await session.get(Task, "e1")
        assert task is not None
        assert await task_rows.requeue(session, task)
    rows = await from_rows(sessions)
    assert rows["snapshot"]["tasks_by_status"]["queued"] == 1
    assert rows["snapshot"]["tasks_by_status"]["error"] == 0
    assert await folded(sessions) == 2
    assert await scrape(sessions, grace=0) == rows

    async with sessions.begin() as session:
        assert sorted(await task_rows.delete_finished(session, ["s1", "f1", "e1"])) == [
            "f1", "s1"]
    rows = await from_rows(sessions)
    assert rows["snapshot"]["llm_calls"] == 3 and rows["genai"][0]["model"] == "sim:a"
    assert await scrape(sessions, grace=0) == rows


async def test_the_totals_row_is_created_when_missing(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    from adapt.store.models import MetricsRollup

    await add_task(sessions, "s1", "succeeded")
    async with sessions.begin() as session:
        await session.execute(delete(MetricsRollup))
    assert await scrape(sessions, grace=0) == await from_rows(sessions)
    assert await folded(sessions) == 1
    async with sessions() as session:
        assert await session.scalar(select(func.count()).select_from(MetricsRollup)) == 1


async def test_concurrent_scrapes_fold_each_task_once(pg_url: str) -> None:
    """API replicas scraping at once (PostgreSQL): each waits for the totals' row lock, so no
    task is folded twice and every scrape equals the rows."""
    engine = create_engine(pg_url)
    try:
        sessions = session_factory(engine)
        for i in range(12):
            await add_task(sessions, f"t{i}", "succeeded" if i % 3 else "failed",
                           calls=1 + i % 3, model=f"sim:{i % 2}")
        rows = await from_rows(sessions)
        scrapes = await asyncio.gather(*(scrape(sessions, batch=2, grace=0) for _ in range(5)))
        assert all(s == rows for s in scrapes)
        assert await folded(sessions) == 10
        assert await scrape(sessions, batch=2, grace=0) == rows
        assert await folded(sessions) == 12
    finally:
        await engine.dispose()
