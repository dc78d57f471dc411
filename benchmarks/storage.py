"""Database bytes per LLM call: what persisting a task costs on disk.

    python -m benchmarks.storage [--tasks 200] [--database postgres|sqlite]

Runs simulated TextCraft tasks (in this process, zero latency) through the real ``DbSink`` on a
throw-away database, then measures every task table (rows, indexes, TOAST) and divides by the
LLM calls made. PostgreSQL is measured after ``VACUUM FULL`` (live data, no dead row versions;
the size before it is printed too); SQLite after ``VACUUM``. Two figures against 1.5 KB per LLM
call: what the prompts take (the ``prompt_blocks`` table and the prompt columns of
``llm_calls``), and everything.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import inspect, text

from adapt.logsetup import setup_logging
from adapt.store.migrate import _sync_url
from benchmarks.perfkit import (
    Figure,
    load_avg,
    scratch_database,
    stored_tasks,
    table,
)

GOAL_BYTES = 1536
#: tables that grow with tasks (``api_keys``, ``workers``, webhooks do not)
SKIP = {"alembic_version", "api_keys", "workers", "webhook_endpoints", "webhook_deliveries"}


async def _fill(url: str, tasks: int) -> int:
    return sum((await stored_tasks(url, ((seed, "bench") for seed in range(tasks)))).values())


def _sizes(url: str, *, vacuum: bool) -> dict[str, int]:
    """Bytes per table (with its indexes and TOAST)."""
    engine = create_sync_engine(_sync_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            names = [t for t in inspect(conn).get_table_names() if t not in SKIP]
            if engine.dialect.name == "sqlite":
                if vacuum:
                    conn.execute(text("VACUUM"))
                rows = conn.execute(text(
                    "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")).all()
                by_object = {str(r[0]): int(r[1]) for r in rows}
                indexes = {str(r[0]): str(r[1]) for r in conn.execute(text(
                    "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'"))}
                out = dict.fromkeys(names, 0)
                for obj, size in by_object.items():
                    owner = indexes.get(obj, obj)
                    if owner in out:
                        out[owner] += size
                return out
            if vacuum:
                conn.execute(text(f"VACUUM FULL {', '.join(names)}"))
            return {t: int(conn.execute(text("SELECT pg_total_relation_size(:t)"),
                                        {"t": t}).scalar_one()) for t in names}
    finally:
        engine.dispose()


def _prompt_bytes(url: str, blocks_table: int) -> int:
    """What the prompts take: the ``prompt_blocks`` table (rows, index) where it exists, plus
    the prompt columns of ``llm_calls`` (inline text and messages, or the block ref), as
    stored (PostgreSQL: after its own compression)."""
    engine = create_sync_engine(_sync_url(url))
    try:
        with engine.connect() as conn:
            present = {c["name"] for c in inspect(conn).get_columns("llm_calls")}
            size = ("pg_column_size({})" if engine.dialect.name == "postgresql"
                    else "length(CAST({} AS BLOB))")
            columns = [c for c in ("prompt", "messages", "prompt_ref") if c in present]
            total = " + ".join(f"COALESCE(SUM({size.format(c)}), 0)" for c in columns)
            inline = int(conn.execute(text(f"SELECT {total} FROM llm_calls")).scalar_one())
    finally:
        engine.dispose()
    return inline + blocks_table


def run(tasks: int = 200, database: str = "postgres") -> dict[str, Any]:
    with scratch_database(database) as url:
        empty = _sizes(url, vacuum=True)
        calls = asyncio.run(_fill(url, tasks))
        raw = _sizes(url, vacuum=False)
        live = _sizes(url, vacuum=True)
        grown = {t: live[t] - empty.get(t, 0) for t in live}
        prompts = _prompt_bytes(url, grown.get("prompt_blocks", 0))
    return {"database": database, "tasks": tasks, "calls": calls, "tables": grown,
            "bytes": sum(grown.values()), "prompt_bytes": prompts,
            "raw_bytes": sum(raw[t] - empty.get(t, 0) for t in raw)}


def report(result: dict[str, Any]) -> str:
    calls = result["calls"]
    rows = [("database, tasks, LLM calls",
             f"{result['database']}, {result['tasks']}, {calls}")]
    for name, size in sorted(result["tables"].items(), key=lambda kv: -kv[1]):
        rows.append((f"  {name}", f"{size / calls:,.0f} B per call ({size / 1e6:.2f} MB)"))
    rows += [
        ("total per task", f"{result['bytes'] / result['tasks'] / 1024:.1f} KB"),
        ("before vacuum, per call", f"{result['raw_bytes'] / calls:,.0f} B"),
        ("load (1 min)", f"{load_avg():.2f}"),
    ]
    figures = [
        Figure(f"prompt storage per LLM call ({result['database']}: blocks and the call's "
               "prompt columns)", result["prompt_bytes"] / calls, GOAL_BYTES, "B"),
        Figure(f"all storage per LLM call ({result['database']}, after vacuum)",
               result["bytes"] / calls, GOAL_BYTES, "B"),
    ]
    return "\n".join([table(rows), *(f.line() for f in figures)])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    args = parser.parse_args(argv)
    setup_logging(False)
    result = run(args.tasks, args.database)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
