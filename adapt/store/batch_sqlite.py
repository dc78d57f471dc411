"""Writing one ``DbSink`` batch on SQLite: the whole transaction in one hop to the driver's
thread.

aiosqlite runs every call on its own thread and wakes the event loop for each answer; through
SQLAlchemy a batch cost about 30 such hops (cursor, execute, fetch and close per statement,
BEGIN, COMMIT). Here one function runs the transaction on the driver's thread: ``BEGIN
IMMEDIATE``, the lease-fenced UPDATE of the task row (``RETURNING``), the inserts and node
updates as ``executemany``, ``COMMIT`` (or ``ROLLBACK`` and the error, which is a database
error like any other: the task resumes by replay). Values are stored as SQLAlchemy stores them
(JSON as text, timestamps as ``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC, booleans as 0/1).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from adapt.store.batch import _CALL_COLS, _FINAL_COLS, _NODE_COLS, _STEP_COLS, Batch, _safe
from adapt.store.event_log import group

_JSON = "jsonb"


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _row(cols: dict[str, str], values: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(orjson.dumps(values[c]).decode() if t == _JSON and values[c] is not None
                 else values[c] for c, t in cols.items())


def _names(cols: dict[str, str]) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


_INSERT_NODE = (f"INSERT INTO nodes (task_id, {_names(_NODE_COLS)}, updated_at) "
                f"VALUES ({_marks(len(_NODE_COLS) + 2)})")
_UPDATE_NODE = ("UPDATE nodes SET " + ", ".join(f'"{c}" = ?' for c in _NODE_COLS if c != "id")
                + ", updated_at = ? WHERE task_id = ? AND id = ?")
_INSERT_STEP = (f"INSERT INTO steps (task_id, {_names(_STEP_COLS)}) "
                f"VALUES ({_marks(len(_STEP_COLS) + 1)})")
_INSERT_CALL = (f"INSERT INTO llm_calls (task_id, {_names(_CALL_COLS)}, attempt, created_at) "
                f"VALUES ({_marks(len(_CALL_COLS) + 3)})")
_INSERT_EVENT = ("INSERT INTO events (task_id, seq, type, payload, ordinal, node_id, "
                 "span, packed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
_INSERT_BLOCK = "INSERT OR IGNORE INTO prompt_blocks (hash, parent, text) VALUES (?, ?, ?)"


def _transaction(db: sqlite3.Connection, task: tuple[str, list[Any]], rows: dict[str, Any]
                 ) -> tuple[int, bool] | None:
    sql, params = task
    db.execute("BEGIN IMMEDIATE")
    try:
        got = db.execute(sql, params).fetchone()
        if got is None:
            db.execute("ROLLBACK")
            return None
        last, cancel = int(got[0]), bool(got[1])
        first = last - rows["count"]  # the seq before the batch's first event
        for statement, many in ((_INSERT_BLOCK, rows["blocks"]), (_INSERT_NODE, rows["created"]),
                                (_UPDATE_NODE, rows["updated"]), (_INSERT_STEP, rows["steps"]),
                                (_INSERT_CALL, rows["calls"])):
            if many:
                db.executemany(statement, many)
        db.executemany(_INSERT_EVENT, [(e[0], first + e[1], *e[2:])
                                       for e in rows["events"]])
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return last, cancel


def _task_update(task_id: str, attempt: int, owner: str, batch: Batch, values: dict[str, Any],
                 now: str) -> tuple[str, list[Any]]:
    sets = ["last_seq = last_seq + ?", "updated_at = ?", "nodes_count = nodes_count + ?"]
    params: list[Any] = [len(batch.events), now, len(batch.created)]
    if values["calls"]:
        sets += ["llm_calls = llm_calls + ?", "prompt_tokens = prompt_tokens + ?",
                 "completion_tokens = completion_tokens + ?",
                 "cost_usd = cost_usd + ?" if values["cost_usd"] is not None
                 else "cost_usd = NULL"]
        params += [values["calls"], values["prompt_tokens"], values["completion_tokens"]]
        if values["cost_usd"] is not None:
            params.append(values["cost_usd"])
    if batch.final is not None:
        final = batch.final
        sets += [f'"{c}" = ?' for c in _FINAL_COLS]
        params += [orjson.dumps(final[c]).decode() if t == _JSON and final[c] is not None
                   else final[c] for c, t in _FINAL_COLS.items()]
        sets += ["finished_at = ?", "lease_owner = NULL", "lease_expires_at = NULL"]
        params.append(now)
    sql = (f"UPDATE tasks SET {', '.join(sets)} WHERE id = ? AND attempt = ? AND lease_owner = ? "
           "RETURNING last_seq, cancel_requested")
    return sql, [*params, task_id, attempt, owner]


async def write_sqlite(engine: AsyncEngine, task_id: str, attempt: int, owner: str,
                       batch: Batch, values: dict[str, Any], now: datetime
                       ) -> tuple[int, bool] | None:
    """One hop to the driver's thread; returns (last seq, cancel requested), None when the
    lease is lost."""
    stamp = _stamp(now)
    safe = orjson.loads(_safe([list(batch.blocks.values()), list(batch.created.values()),
                               list(batch.updated.values()), batch.steps, batch.calls,
                               batch.events, batch.final]))
    blocks, created, updated, steps, calls, events, final = safe
    clean = Batch(events=events, final=final, created=dict(enumerate(created)))
    rows = {
        "blocks": [(b["hash"], b["parent"], b["text"]) for b in blocks],
        "created": [(task_id, *_row(_NODE_COLS, n), stamp) for n in created],
        "updated": [(*_row({c: t for c, t in _NODE_COLS.items() if c != "id"}, n), stamp,
                     task_id, n["id"]) for n in updated],
        "steps": [(task_id, *_row(_STEP_COLS, s)) for s in steps],
        "calls": [(task_id, *_row(_CALL_COLS, c), attempt, stamp) for c in calls],
        "events": [(task_id, e["i"], e["type"],
                    None if e["payload"] is None else orjson.dumps(e["payload"]).decode(),
                    e["ordinal"], e["node_id"], e["span"], e["packed"], stamp)
                   for e in group(events)],
        "count": len(events),
    }
    task = _task_update(task_id, attempt, owner, clean, values, stamp)
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection  # aiosqlite.Connection
        result: tuple[int, bool] | None = await driver._execute(
            _transaction, driver._conn, task, rows)
        return result
