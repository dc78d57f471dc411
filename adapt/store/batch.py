"""Writing one ``DbSink`` batch: the task row's lease-fenced update, prompt blocks, nodes,
steps, LLM calls and events, atomically.

PostgreSQL: ONE statement, one round trip, no transaction block (a statement is atomic on its
own). The task row's UPDATE is the first data-modifying CTE; every insert and node update reads
from it, so nothing is written when the lease is lost (the statement then returns no row). The
rows travel as JSON arrays unpacked by ``jsonb_to_recordset``; the statement text depends only
on whether the batch ends the task, so each connection prepares it once. It is sent as a
driver-level statement (no ORM, no SQL compilation, no statement per row).

SQLite: ``adapt.store.batch_sqlite`` (one transaction on the driver's thread). Both take the
batch's gap-free sequence numbers from ``tasks.last_seq`` and add its aggregates (and, when it
ends the task, its final row: the lease goes) in the same statement or transaction as the rows,
only while the attempt holds the lease.
"""

from __future__ import annotations

import asyncio
import base64
import sqlite3
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapt.store.event_log import group
from adapt.store.text import storable


@dataclass
class Batch:
    """What one flush writes (rows as plain dicts, JSON-ready)."""

    events: list[dict[str, Any]] = field(default_factory=list)  # type, payload, ordinal
    created: dict[int, dict[str, Any]] = field(default_factory=dict)  # nodes first seen here
    updated: dict[int, dict[str, Any]] = field(default_factory=dict)  # older nodes' snapshots
    steps: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)  # new prompt blocks
    #: every block the batch's calls add to their chains, new or taken as stored, parents
    #: first: sent when one taken as stored was deleted meanwhile
    chain: dict[str, dict[str, Any]] = field(default_factory=dict)
    final: dict[str, Any] | None = None  # the task row of a task this batch ends


def _safe(value: Any) -> bytes:
    """``value`` as JSON that every database stores: NUL and lone surrogates (model output,
    observations) replaced by U+FFFD. The common case costs one ``orjson.dumps``."""
    try:
        out = orjson.dumps(value)
    except TypeError:  # a lone surrogate
        return orjson.dumps(storable(value))
    return orjson.dumps(storable(value)) if b"\\u0000" in out else out


# -- PostgreSQL: one statement ---------------------------------------------------------------
_NODE_COLS = {
    "id": "int", "parent_id": "int", "position": "int", "depth": "int", "kind": "text",
    "goal": "text", "logic": "text", "status": "text", "executor_success": "bool",
    "self_assessed": "bool", "claim": "bool", "verdict": "text", "evidence": "text",
    "success": "bool", "reward": "float8", "termination": "text", "plan": "jsonb",
    "context_in": "text", "context_out": "text", "steps_count": "int", "usage": "jsonb",
    "error": "text", "label": "text", "reason": "text", "reused": "jsonb",
}
_STEP_COLS = {"node_id": "int", "index": "int", "kind": "text", "raw": "text", "text": "text",
              "observation": "text", "reward": "float8", "done": "bool", "error": "text",
              "extra": "jsonb"}
_CALL_COLS = {
    "id": "int", "node_id": "int", "role": "text", "model": "text", "simulated": "bool",
    "prompt_ref": "text", "chat": "bool", "stop": "jsonb", "request_fingerprint": "text", "response": "jsonb",
    "completion": "text", "prompt_tokens": "int", "completion_tokens": "int",
    "usage_estimated": "bool", "latency_s": "float8", "cost_usd": "float8", "monitor": "jsonb",
    "retries": "int", "request_model": "text",
}
_FINAL_COLS = {"status": "text", "success": "bool", "reward": "float8", "result": "jsonb",
               "error": "text", "max_depth": "int", "resolved_goal": "text"}


def _record(cols: dict[str, str]) -> str:
    return ", ".join(f'"{c}" {t}' for c, t in cols.items())


def _names(cols: dict[str, str], prefix: str = "") -> str:
    return ", ".join(f'{prefix}"{c}"' for c in cols)


def _pg_statement(final: bool) -> str:
    # $1 task id, $2 attempt, $3 owner, $4 events, $5 now, $6 nodes created, $7 calls,
    # $8 prompt tokens, $9 completion tokens, $10 cost (NULL: unknown), $11 blocks,
    # $12 created nodes, $13 updated nodes, $14 steps, $15 calls, $16 events, $17 final row
    ended = ""
    if final:
        sets = ", ".join(f'"{c}" = f."{c}"' for c in _FINAL_COLS)
        ended = (f", {sets}, finished_at = $5, lease_owner = NULL, lease_expires_at = NULL "
                 f"FROM jsonb_to_record($17::text::jsonb) AS f({_record(_FINAL_COLS)})")
    node_set = ", ".join(f'"{c}" = r."{c}"' for c in _NODE_COLS if c != "id")
    return f"""
WITH t AS (
  UPDATE tasks SET last_seq = last_seq + $4, updated_at = $5,
    nodes_count = nodes_count + $6, llm_calls = llm_calls + $7,
    prompt_tokens = prompt_tokens + $8, completion_tokens = completion_tokens + $9,
    cost_usd = CASE WHEN $7 > 0 AND $10::float8 IS NULL THEN NULL ELSE cost_usd + $10 END
    {ended}
  WHERE id = $1 AND attempt = $2 AND lease_owner = $3
  RETURNING last_seq, cancel_requested
), b AS (
  INSERT INTO prompt_blocks (hash, parent, text)
  SELECT r.hash, r.parent, r.text FROM t,
    jsonb_to_recordset($11::text::jsonb) AS r(hash text, parent text, text text)
  ON CONFLICT (hash) DO NOTHING
), n AS (
  INSERT INTO nodes (task_id, {_names(_NODE_COLS)}, updated_at)
  SELECT $1, {_names(_NODE_COLS, "r.")}, $5 FROM t,
    jsonb_to_recordset($12::text::jsonb) AS r({_record(_NODE_COLS)})
), u AS (
  UPDATE nodes SET {node_set}, updated_at = $5 FROM t,
    jsonb_to_recordset($13::text::jsonb) AS r({_record(_NODE_COLS)})
  WHERE nodes.task_id = $1 AND nodes.id = r.id
), s AS (
  INSERT INTO steps (task_id, {_names(_STEP_COLS)})
  SELECT $1, {_names(_STEP_COLS, "r.")} FROM t,
    jsonb_to_recordset($14::text::jsonb) AS r({_record(_STEP_COLS)})
), c AS (
  INSERT INTO llm_calls (task_id, {_names(_CALL_COLS)}, attempt, created_at)
  SELECT $1, {_names(_CALL_COLS, "r.")}, $2, $5 FROM t,
    jsonb_to_recordset($15::text::jsonb) AS r({_record(_CALL_COLS)})
), e AS (
  INSERT INTO events (task_id, seq, type, payload, ordinal, node_id, span, packed, created_at)
  SELECT $1, t.last_seq - $4 + r.i, r.type, r.payload, r.ordinal, r.node_id, r.span,
    decode(r.packed, 'base64'), $5
  FROM t, jsonb_to_recordset($16::text::jsonb)
      AS r(i int, type text, payload jsonb, ordinal int, node_id int, span int, packed text)
)
SELECT last_seq, cancel_requested FROM t"""


_PG = {False: _pg_statement(False), True: _pg_statement(True)}


#: connections of an engine's pool left to everything but batch writes (heartbeats, claims)
SPARE_CONNECTIONS = 2
_slots: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary())  # by event loop, by engine


def write_connections(engine: AsyncEngine) -> int:
    """How many batch writes of ``engine`` may run at once: its pool's size, less
    :data:`SPARE_CONNECTIONS`."""
    size = getattr(engine.pool, "size", lambda: SPARE_CONNECTIONS + 1)()
    return int(max(1, size - SPARE_CONNECTIONS))


def write_slots(engine: AsyncEngine) -> asyncio.Semaphore:
    """:func:`write_connections` as a semaphore. A burst of writes beyond that waits for a pooled connection
    instead of opening overflow connections, which the pool closes again after one write
    (connecting, and preparing the batch statement anew, cost more CPU than the write)."""
    loop = asyncio.get_running_loop()
    by_engine = _slots.get(loop)
    if by_engine is None:  # (not setdefault: its default would be built on every write)
        by_engine = _slots[loop] = weakref.WeakKeyDictionary()
    slots = by_engine.get(engine.sync_engine)
    if slots is None:
        slots = by_engine[engine.sync_engine] = asyncio.Semaphore(write_connections(engine))
    return slots


def pg_rows(batch: Batch) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes]:
    """A batch's rows as the statements take them: JSON arrays of its new prompt blocks,
    created nodes, updated nodes, steps, calls and event rows (``i``: each row's first event
    in the batch; packed entries as base64)."""
    events = group(batch.events)
    for event_row in events:
        if event_row["packed"] is not None:  # bytes travel in the JSON as base64
            event_row["packed"] = base64.b64encode(event_row["packed"]).decode()
        if event_row["payload"] is None:
            del event_row["payload"]  # NULL (not JSON null)
    return (_safe(list(batch.blocks.values())), _safe(list(batch.created.values())),
            _safe(list(batch.updated.values())), _safe(batch.steps), _safe(batch.calls),
            _safe(events))


async def write_postgres(engine: AsyncEngine, task_id: str, attempt: int, owner: str,
                         batch: Batch, values: dict[str, Any], now: datetime
                         ) -> tuple[int, bool] | None:
    """One round trip for this batch alone; returns (last seq, cancel requested), None when
    the lease is lost. (``adapt.store.batch_group.write_grouped`` sends it with the other
    tasks' writes queued beside it.)"""
    args: tuple[Any, ...] = (
        task_id, attempt, owner, len(batch.events), now, len(batch.created), values["calls"],
        values["prompt_tokens"], values["completion_tokens"], values["cost_usd"],
        *(part.decode() for part in pg_rows(batch)),
    )
    if batch.final is not None:
        args += (_safe(batch.final).decode(),)
    async with write_slots(engine), engine.connect() as conn:
        # no transaction block: the statement is atomic on its own (BEGIN and COMMIT would be
        # two more round trips); SQLAlchemy still sees it (its events, its handling of a
        # connection that died in the pool: invalidated on use, never handed out again)
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        row: Any = (await conn.exec_driver_sql(_PG[batch.final is not None], args)).first()
    return None if row is None else (int(row[0]), bool(row[1]))


#: the foreign keys that refuse a write pointing at a prompt block that is not stored
#: (migration 0013)
BLOCK_KEYS = ("fk_llm_calls_prompt_ref", "fk_prompt_blocks_parent")


def refused_for_a_block(exc: BaseException) -> bool:
    """Whether a batch write failed because a prompt block it points at is not stored (it was
    deleted after this process took it as stored). SQLite names no constraint, and the
    batch's other keys (the task row, a step's node) hold by construction."""
    if isinstance(exc, sqlite3.IntegrityError):
        return "FOREIGN KEY" in str(exc)
    orig = getattr(exc, "orig", None)
    if not isinstance(exc, IntegrityError) or orig is None:
        return False
    name = getattr(orig, "constraint_name", None) or str(orig)
    return any(key in name for key in BLOCK_KEYS)
