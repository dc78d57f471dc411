"""What a big database costs the reads that should not care: ``/metrics``, a deep cursor page
and filters that match few tasks, at 50 tasks and grown to ``--tasks`` (issue 36).

    python -m benchmarks.growth [--tasks 5000] [--seeds 50] [--repeat 15]
    python -m benchmarks.growth --tasks 100000      # the issue's figure (tens of minutes)

A private PostgreSQL database (created on the server of ``ADAPT_BENCH_POSTGRES_URL`` and dropped
afterwards) gets ``--seeds`` real simulated TextCraft tasks, run in this process through the real
``DbSink`` (every node, step, LLM call and event as a worker writes them). The figures are
measured, then the database is grown to ``--tasks`` tasks by copying those tasks' rows in SQL
(new ids, each copy older than the last, none folded into the ``/metrics`` running totals yet),
``/metrics`` folds the backlog as its scrapes would, ``VACUUM ANALYZE`` stands in for
autovacuum, and the same figures are measured again. Each figure is the fastest of ``--repeat``
calls of the service's own query functions (no HTTP), after one warm-up (the median beside it:
on a shared machine the fastest is the cost without other work in the way); for the list queries
also the database's own execution time (``EXPLAIN ANALYZE``: the index work, without sending
and decoding the rows, which the first figure includes).

Printed beside each: the figure as it was before issue 36 (``/metrics`` aggregating every row;
the cursor predicate ``created_at < c OR (created_at = c AND id < i)``) and the goal, at most
2x the cost at 50 tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import and_, func, or_, select, text
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.logsetup import setup_logging
from adapt.service import operations
from adapt.store import metrics, queries
from adapt.store.db import create_engine, session_factory
from adapt.store.migrate import _sync_url
from adapt.store.models import Base, Task
from adapt.store.traces import counter_values
from benchmarks.perfkit import (
    Clock,
    Figure,
    load_avg,
    scratch_database,
    stored_tasks,
    table,
)

TENANT = "bench"
GOAL_RATIO = 2.0
#: the tables whose rows are copied (every table keyed by a task)
COPIED = ("tasks", "nodes", "steps", "llm_calls", "events")
#: tasks copied per transaction while growing
ROUND = 2000


async def _seed(url: str, seeds: int) -> int:
    """``seeds`` simulated tasks of ``TENANT``; their LLM calls."""
    return (await stored_tasks(url, ((seed, TENANT) for seed in range(seeds))))[TENANT]


def _copy_statement(table: str, seed_ids: str) -> str:
    """INSERT ... SELECT copying the seed tasks' rows of ``table`` once per ``g`` in
    ``generate_series(:lo, :hi)``: a copy's task id is md5(seed id : g); a copied task is
    ``g`` minutes older than its seed and not folded."""
    columns = [c.name for c in Base.metadata.tables[table].columns]
    key = "id" if table == "tasks" else "task_id"
    exprs = []
    for c in columns:
        if c == key:
            exprs.append(f"substr(md5(t.{key} || ':' || g), 1, 32)")
        elif table == "tasks" and c in ("created_at", "updated_at", "started_at",
                                          "finished_at"):
            exprs.append(f"t.{c} - g * interval '1 minute'")
        elif table == "tasks" and c == "metrics_folded":
            exprs.append("false")
        else:
            exprs.append(f"t.{c}")
    names = ", ".join(f'"{c}"' for c in columns)
    return (f"INSERT INTO {table} ({names}) SELECT {', '.join(exprs)} FROM {table} t "
            f"CROSS JOIN generate_series(:lo, :hi) AS g WHERE t.{key} IN ({seed_ids})")


def _grow(url: str, tasks: int, seeds: int) -> tuple[float, int]:
    """Copy the seed tasks until there are ``tasks``: (seconds, tasks now)."""
    engine = create_sync_engine(_sync_url(url))
    started = time.perf_counter()
    try:
        with engine.connect() as conn:
            ids = [str(i) for i in conn.execute(text("SELECT id FROM tasks")).scalars()]
        seed_ids = ", ".join(f"'{i}'" for i in ids)
        statements = [text(_copy_statement(t, seed_ids)) for t in COPIED]
        generations = max(0, -(-(tasks - seeds) // seeds))
        per_round = max(1, ROUND // seeds)
        for lo in range(1, generations + 1, per_round):
            hi = min(generations, lo + per_round - 1)
            with engine.begin() as conn:
                for stmt in statements:
                    conn.execute(stmt, {"lo": lo, "hi": hi})
            print(f"  grown to {seeds * (hi + 1)} tasks ({time.perf_counter() - started:.0f} s)",
                  flush=True)
        with engine.connect() as conn:
            total = int(conn.execute(text("SELECT count(*) FROM tasks")).scalar_one())
    finally:
        engine.dispose()
    return time.perf_counter() - started, total


def _vacuum(url: str) -> int:
    """VACUUM ANALYZE (what autovacuum would have done); the database's bytes."""
    engine = create_sync_engine(_sync_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text("VACUUM ANALYZE"))
            return int(conn.execute(text(
                "SELECT pg_database_size(current_database())")).scalar_one())
    finally:
        engine.dispose()


async def _fold_all(url: str) -> tuple[int, float]:
    """Fold every finished task into the ``/metrics`` running totals, a scrape's batch at a
    time (as the scrapes after an upgrade do): (tasks folded, seconds)."""
    engine = create_engine(url)
    sessions = session_factory(engine)
    folded = 0
    started = time.perf_counter()
    try:
        while True:
            async with sessions() as session:
                n = await metrics.fold(session, batch=metrics.FOLD_BATCH, grace=0)
                await session.commit()
            folded += n
            if n == 0:
                return folded, time.perf_counter() - started
    finally:
        await engine.dispose()


async def _timed(sessions: async_sessionmaker[AsyncSession], repeat: int,
                 call: Callable[[AsyncSession], Awaitable[Any]]) -> tuple[float, float]:
    """The fastest and the median milliseconds of ``call`` over ``repeat`` runs (a warm-up
    first), each in its own session."""
    times = []
    for i in range(repeat + 1):
        async with sessions() as session:
            start = time.perf_counter()
            await call(session)
            if i:
                times.append(1000 * (time.perf_counter() - start))
    return min(times), statistics.median(times)


async def _executed(sessions: async_sessionmaker[AsyncSession], repeat: int,
                    stmt: Any) -> tuple[float, float]:
    """The fastest and the median of the database's own execution time of ``stmt`` (``EXPLAIN
    ANALYZE``: the index work, without sending or decoding the rows), in milliseconds."""
    times = []
    async with sessions() as session:
        compiled = stmt.compile(dialect=session.get_bind().dialect)
        params = tuple(compiled.params[p] for p in compiled.positiontup or ())
        connection = await session.connection()
        for i in range(repeat + 1):
            plan = [str(r[0]) for r in await connection.exec_driver_sql(
                "EXPLAIN (ANALYZE, TIMING OFF) " + compiled.string, params)]
            if i:
                times.append(float(plan[-1].split(":")[1].split()[0]))
    return min(times), statistics.median(times)


async def _old_metrics(session: AsyncSession) -> None:
    """``/metrics`` before issue 36: every row aggregated at each scrape."""
    await metrics.aggregate(session, Task.id.is_not(None))
    await counter_values(session)


async def _deep_cursor(session: AsyncSession, depth: int) -> str:
    row = (await session.execute(
        select(Task.created_at, Task.id).where(Task.tenant == TENANT)
        .order_by(Task.created_at.desc(), Task.id.desc()).offset(depth).limit(1))).one()
    return queries.encode_cursor(row[0], row[1])


async def _old_page(session: AsyncSession, cursor: str) -> None:
    """A cursor page before issue 36: the OR predicate, a filter on rows."""
    created_at, task_id = queries.decode_cursor(cursor)
    stmt = (select(Task).where(Task.tenant == TENANT, or_(
        Task.created_at < created_at, and_(Task.created_at == created_at, Task.id < task_id)))
        .order_by(Task.created_at.desc(), Task.id.desc()).limit(21))
    (await session.execute(stmt)).scalars().all()


async def measure(url: str, repeat: int) -> dict[str, Any]:
    """Each figure's median milliseconds at the database's current size."""
    engine = create_engine(url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session:
            n = int(await session.scalar(select(func.count()).select_from(Task)) or 0)
            cursor = await _deep_cursor(session, int(0.6 * n))
            figures = await operations.metrics(session)

        def listing(**filters: Any) -> Callable[[AsyncSession], Awaitable[Any]]:
            return lambda s: queries.list_tasks(s, TENANT, limit=20, **filters)

        async def executed(**filters: Any) -> tuple[float, float]:
            return await _executed(sessions, repeat, queries.list_tasks_statement(
                TENANT, limit=20, **filters))

        timed = {
            "metrics": await _timed(sessions, repeat, operations.metrics),
            "metrics_old": await _timed(sessions, repeat, _old_metrics),
            "deep_page": await _timed(sessions, repeat, listing(cursor=cursor)),
            "deep_page_old": await _timed(sessions, repeat,
                                          lambda s: _old_page(s, cursor)),
            "environment_nomatch": await _timed(sessions, repeat,
                                                listing(environment="nope")),
            "strategy_nomatch": await _timed(sessions, repeat, listing(strategy="nope")),
            "status_queued": await _timed(sessions, repeat, listing(status="queued")),
            "deep_page_db": await executed(cursor=cursor),
            "environment_nomatch_db": await executed(environment="nope"),
            "strategy_nomatch_db": await executed(strategy="nope"),
            "status_queued_db": await executed(status="queued"),
        }
        out: dict[str, Any] = {"tasks": n, "llm_calls": figures.snapshot.llm_calls,
                               "depth": int(0.6 * n)}
        for key, (best, median) in timed.items():
            out[key], out[f"{key}_median"] = best, median
        return out
    finally:
        await engine.dispose()


def run(tasks: int = 5000, seeds: int = 50, repeat: int = 15) -> dict[str, Any]:
    with scratch_database("postgres") as url:
        with Clock() as seeding:
            calls = asyncio.run(_seed(url, seeds))
        asyncio.run(_fold_all(url))
        _vacuum(url)
        small = asyncio.run(measure(url, repeat))
        grow_s, total = _grow(url, tasks, seeds)
        folded, fold_s = asyncio.run(_fold_all(url))
        size = _vacuum(url)
        large = asyncio.run(measure(url, repeat))
    return {"seeds": seeds, "seed_calls": calls, "seed_s": seeding.wall, "grow_s": grow_s,
            "total": total, "folded": folded, "fold_s": fold_s, "bytes": size,
            "small": small, "large": large}


FIGURES = (
    ("metrics", "GET /metrics (running totals)", "metrics_old"),
    ("deep_page", "cursor page 60% deep, row comparison", "deep_page_old"),
    ("environment_nomatch", "?environment= matching nothing", None),
    ("strategy_nomatch", "?strategy= matching nothing", None),
    ("status_queued", "?status=queued (none queued)", None),
)


def figures(r: dict[str, Any]) -> list[Figure]:
    """Each figure at N over at 50 tasks, as the service sees it (its query, the rows sent and
    decoded) and, for the list queries, as the database executes it."""
    at = f"at {r['large']['tasks']} / at {r['small']['tasks']} tasks"
    out = []
    for key, label, _ in FIGURES:
        out.append(Figure(f"{label}: {at}", r["large"][key] / r["small"][key], GOAL_RATIO, "x"))
        if f"{key}_db" in r["large"]:
            out.append(Figure(f"{label}, the database's execution: {at}",
                              r["large"][f"{key}_db"] / r["small"][f"{key}_db"], GOAL_RATIO,
                              "x"))
    return out


def report(r: dict[str, Any]) -> str:
    s, g = r["small"], r["large"]
    rows = [
        ("seed tasks (simulated TextCraft), LLM calls", f"{r['seeds']}, {r['seed_calls']} "
         f"({r['seed_s']:.1f} s)"),
        ("grown to", f"{r['total']} tasks, {g['llm_calls']} LLM calls, "
         f"{r['bytes'] / 1e6:.0f} MB after VACUUM ({r['grow_s']:.0f} s to copy)"),
        ("/metrics backlog folded", f"{r['folded']} tasks in {r['fold_s']:.1f} s "
         f"({1000 * r['fold_s'] / max(1, r['folded']):.2f} ms per task, "
         f"{metrics.FOLD_BATCH} per scrape)"),
    ]
    for key, label, old in FIGURES:
        line = (f"{s[key]:.2f} ms at {s['tasks']}, {g[key]:.2f} ms at {g['tasks']} (medians "
                f"{s[key + '_median']:.2f}, {g[key + '_median']:.2f})")
        if old:
            line += f"; before issue 36: {s[old]:.2f} ms, {g[old]:.2f} ms"
        if f"{key}_db" in g:
            line += (f"; the database's execution {s[key + '_db']:.3f} ms, "
                     f"{g[key + '_db']:.3f} ms")
        rows.append((label, line))
    rows.append(("load (1 min)", f"{load_avg():.2f}"))
    return "\n".join([table(rows), *(f.line() for f in figures(r))])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    if args.tasks < args.seeds or args.seeds < 1:
        parser.error("--tasks must be at least --seeds, and --seeds at least 1")
    setup_logging(False)
    result = run(args.tasks, args.seeds, args.repeat)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
