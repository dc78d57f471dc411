"""What deleting a tenant's tasks gives back: database size before and after, with VACUUM.

    python -m benchmarks.deletion [--tasks 100] [--database postgres|sqlite]

Two tenants run ``--tasks`` simulated TextCraft tasks each (in this process, through the real
``DbSink``; the tenants' seeds differ, so their prompts share the templates' blocks and little
else). Then one tenant's tasks are purged the way ``adapt tasks purge`` does (batches of 20),
and the database is measured: as it was, right after the deletion, after a plain ``VACUUM``
(PostgreSQL marks the space reusable; the files keep their size) and after ``VACUUM FULL``
(the tables rewritten: the space goes back to the operating system). SQLite: after
``VACUUM``. Also printed: how long the deletion took per task, and that nothing of the purged
tenant is left.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import text

from adapt.logsetup import setup_logging
from adapt.service.retention import purge
from adapt.store.db import create_engine, session_factory
from adapt.store.migrate import _sync_url
from benchmarks.perfkit import (
    load_avg,
    scratch_database,
    stored_tasks,
    table,
)

TENANTS = ("kept", "purged")


async def _fill(url: str, tasks: int) -> dict[str, int]:
    """Run ``tasks`` tasks per tenant; LLM calls per tenant."""
    return await stored_tasks(url, ((2 * i + t, tenant) for i in range(tasks)
                                    for t, tenant in enumerate(TENANTS)))


async def _purge(url: str) -> tuple[int, int, int, float]:
    engine = create_engine(url)
    try:
        started = time.perf_counter()
        done = await purge(session_factory(engine), tenant="purged")
        return len(done.tasks), done.blocks, done.batches, time.perf_counter() - started
    finally:
        await engine.dispose()


def _size(url: str, vacuum: str = "") -> int:
    """The database's bytes (after ``vacuum``: "", "VACUUM" or "VACUUM FULL")."""
    engine = create_sync_engine(_sync_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if vacuum:
                conn.execute(text(vacuum if engine.dialect.name == "postgresql" else "VACUUM"))
            if engine.dialect.name == "postgresql":
                return int(conn.execute(text(
                    "SELECT pg_database_size(current_database())")).scalar_one())
            pages = conn.execute(text("PRAGMA page_count")).scalar_one()
            return int(pages) * int(conn.execute(text("PRAGMA page_size")).scalar_one())
    finally:
        engine.dispose()


def _left(url: str) -> int:
    """Rows that still name the purged tenant or one of its tasks, and unused prompt blocks."""
    engine = create_sync_engine(_sync_url(url))
    try:
        with engine.connect() as conn:
            tasks = conn.execute(text("SELECT count(*) FROM tasks WHERE tenant = 'purged'"))
            orphans = conn.execute(text(
                "WITH RECURSIVE used(hash) AS (SELECT prompt_ref FROM llm_calls"
                " WHERE prompt_ref IS NOT NULL UNION SELECT b.parent FROM prompt_blocks b"
                " JOIN used u ON b.hash = u.hash WHERE b.parent IS NOT NULL)"
                " SELECT count(*) FROM prompt_blocks WHERE hash NOT IN (SELECT hash FROM used)"))
            return int(tasks.scalar_one()) + int(orphans.scalar_one())
    finally:
        engine.dispose()


def run(tasks: int = 100, database: str = "postgres") -> dict[str, Any]:
    with scratch_database(database) as url:
        empty = _size(url, "VACUUM FULL")
        calls = asyncio.run(_fill(url, tasks))
        before = _size(url, "VACUUM FULL")
        deleted, blocks, batches, seconds = asyncio.run(_purge(url))
        return {"database": database, "tasks": tasks, "calls": calls, "empty": empty,
                "before": before,
                "deleted": deleted, "blocks": blocks, "batches": batches, "seconds": seconds,
                "after": _size(url), "vacuum": _size(url, "VACUUM"),
                "vacuum_full": _size(url, "VACUUM FULL"), "left": _left(url)}


def report(r: dict[str, Any]) -> str:
    mb = 1e6
    freed = r["before"] - r["vacuum_full"]
    rows = [
        ("database, tasks per tenant", f"{r['database']}, {r['tasks']}"),
        ("LLM calls (kept, purged tenant)", f"{r['calls']['kept']}, {r['calls']['purged']}"),
        ("size of the empty database", f"{r['empty'] / mb:.2f} MB"),
        ("size before (after VACUUM FULL)", f"{r['before'] / mb:.2f} MB (tasks: "
         f"{(r['before'] - r['empty']) / mb:.2f} MB)"),
        ("purge", f"{r['deleted']} tasks, {r['blocks']} prompt blocks, {r['batches']} "
         f"batches, {r['seconds']:.2f} s ({1000 * r['seconds'] / max(1, r['deleted']):.1f} ms "
         "per task)"),
        ("size right after", f"{r['after'] / mb:.2f} MB"),
        ("size after VACUUM", f"{r['vacuum'] / mb:.2f} MB"),
        ("size after VACUUM FULL", f"{r['vacuum_full'] / mb:.2f} MB (freed {freed / mb:.2f} MB, "
         f"{100 * freed / max(1, r['before'] - r['empty']):.0f}% of the tasks' bytes)"),
        ("rows or blocks of the purged tenant left", str(r["left"])),
        ("load (1 min)", f"{load_avg():.2f}"),
    ]
    return table(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args(argv)
    setup_logging(False)
    result = run(args.tasks, args.database)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
