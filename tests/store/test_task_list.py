"""``adapt.store.queries.list_tasks`` at scale: the cursor is a row comparison that pages
through ties on ``created_at`` exactly, and on PostgreSQL it and each filter are index
conditions (issue 36: deep pages and no-match filters cost the same at any size)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store import queries
from adapt.store.db import create_engine, session_factory
from adapt.store.models import Task, utcnow


async def add_tasks(sessions: async_sessionmaker[AsyncSession]) -> list[Task]:
    """Nine tasks of two tenants; three share each ``created_at`` (ties the cursor breaks by
    id)."""
    base = utcnow().replace(microsecond=0)
    rows = [Task(id=f"{i:02d}", tenant="acme" if i % 4 else "other",
                 status="queued" if i % 2 else "succeeded",
                 environment="textcraft" if i % 3 else "sql", strategy="adapt",
                 d_max=3, executor_model="sim:a", planner_model="sim:a",
                 created_at=base + timedelta(seconds=i // 3)) for i in range(9)]
    async with sessions.begin() as session:
        session.add_all(rows)
    return rows


def newest_first(rows: list[Task]) -> list[str]:
    return [t.id for t in sorted(rows, key=lambda t: (t.created_at, t.id), reverse=True)]


async def pages(sessions: async_sessionmaker[AsyncSession], limit: int,
                **filters: str) -> list[list[str]]:
    out: list[list[str]] = []
    cursor = None
    while True:
        async with sessions() as session:
            page = await queries.list_tasks(session, "acme", cursor=cursor, limit=limit,
                                            **filters)  # type: ignore[arg-type]
        out.append([t.id for t in page.items])
        cursor = page.next_cursor
        if cursor is None:
            return out


async def test_pages_walk_through_ties_newest_first_with_and_without_filters(
        sessions: async_sessionmaker[AsyncSession]) -> None:
    rows = [t for t in await add_tasks(sessions) if t.tenant == "acme"]
    for limit in (1, 2, 4):
        walked = await pages(sessions, limit)
        assert [i for page in walked for i in page] == newest_first(rows)
        assert all(len(page) == limit for page in walked[:-1])
    for name, value in (("environment", "textcraft"), ("environment", "sql"),
                        ("status", "queued"), ("strategy", "adapt")):
        expected = newest_first([t for t in rows if getattr(t, name) == value])
        walked = await pages(sessions, 2, **{name: value})
        assert [i for page in walked for i in page] == expected
    assert await pages(sessions, 2, environment="nope") == [[]]


async def test_the_cursor_and_each_filter_are_index_conditions_on_postgresql(
        pg_url: str) -> None:
    """What the planner *can* do (sequential scans off, since these tables are tiny): the
    row comparison and the filter are both in the index condition, never a filter on rows."""
    engine = create_engine(pg_url)
    try:
        sessions = session_factory(engine)
        await add_tasks(sessions)
        async with sessions() as session:
            await session.execute(text("SET enable_seqscan = off"))
            cursor = queries.encode_cursor(utcnow(), "zz")
            for name, index in (("environment", "ix_tasks_tenant_environment"),
                                ("strategy", "ix_tasks_tenant_strategy"),
                                ("status", "ix_tasks_tenant_status"),
                                (None, "ix_tasks_tenant_created")):
                stmt = queries.list_tasks_statement(
                    "acme", cursor=cursor, limit=20, **({name: "x"} if name else {}))
                compiled = stmt.compile(dialect=engine.dialect)
                params = tuple(compiled.params[p] for p in compiled.positiontup or ())
                connection = await session.connection()
                plan = [str(r[0]) for r in await connection.exec_driver_sql(
                    "EXPLAIN " + compiled.string, params)]
                captured = [line for line in plan if "Index Cond" in line or "Filter" in line]
                joined = "\n".join(plan)
                assert index in joined, joined
                assert any("ROW(created_at, " in line for line in captured
                           if "Index Cond" in line), joined
                assert not any(line.strip().startswith("Filter") for line in captured), joined
    finally:
        await engine.dispose()
