"""Several tasks' batches in one PostgreSQL statement (group writes).

Every task's ``DbSink`` writes its batches one at a time, in order; a process runs hundreds of
tasks, so hundreds of such writes are under way at once. Sent one statement each, every write
paid a statement's fixed cost on both sides: a pooled connection checked out, the statement
bound and executed, seven CTEs started, a commit (a WAL flush) in PostgreSQL. Here the writes
of a process are queued, and those queued while the process's write connections are busy (or
in the same turn of the event loop) go out together as ONE statement: at low load a write
goes out alone, at once (the single-task statement of :mod:`adapt.store.batch`), under load
the statements grow instead of the queue of connections.

The group statement does what the single one does, for each task of the group: the task row's
lease-fenced UPDATE allocates the batch's sequence numbers and adds its aggregates (and its
final row, when the batch ends the task); every insert and node update joins the UPDATE's
returned rows, so a task whose lease is lost writes nothing while the others of its group
write theirs. Its task rows are locked in id order first (as :func:`adapt.store.task_rows.
renew_leases` locks them), so two multi-row writers never wait on each other in a cycle.

Each write learns its own outcome: (last seq, cancel requested), or None when its lease was
lost. When a group statement fails (a prompt block deleted under one of its writes, a row one
task's batch cannot store, a lost connection), each write of the group is sent again alone, so
each gets its own answer or its own error, as without grouping.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from adapt.store.batch import (
    _CALL_COLS,
    _FINAL_COLS,
    _NODE_COLS,
    _STEP_COLS,
    Batch,
    _names,
    _record,
    _safe,
    pg_rows,
    write_connections,
    write_postgres,
    write_slots,
)

log = logging.getLogger(__name__)

#: the most batches one group statement carries
MAX_GROUP = 64
#: group statements of one process under way at once, at most (also bounded by the
#: engine's write slots): fewer and larger statements cost PostgreSQL less than many small
#: ones, and a write queued meanwhile goes with the next
IN_FLIGHT = 2


def _group_statement() -> str:
    # $1 the tasks (k, id, attempt, owner, counts), $2 now, $3 final rows, then one JSON
    # array per kind of row, holding one array of rows per task of the group (in k order):
    # $4 blocks, $5 created nodes, $6 updated nodes, $7 steps, $8 calls, $9 event rows
    final_set = ", ".join(
        f'"{c}" = CASE WHEN f.k IS NULL THEN tasks."{c}" ELSE f."{c}" END' for c in _FINAL_COLS)
    node_set = ", ".join(f'"{c}" = r."{c}"' for c in _NODE_COLS if c != "id")

    def rows(param: int, cols: str) -> str:  # the rows of each task whose write goes on
        return (f"FROM t JOIN jsonb_array_elements(${param}::text::jsonb) WITH ORDINALITY "
                f"AS a(rows, k) ON a.k = t.k CROSS JOIN LATERAL "
                f"jsonb_to_recordset(a.rows) AS r({cols})")

    return f"""
WITH v AS MATERIALIZED (
  SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS v(
    k int, id text, attempt int, owner text, events int, nodes int, calls int,
    prompt_tokens int, completion_tokens int, cost float8)
), locked AS MATERIALIZED (
  SELECT tasks.id FROM tasks WHERE tasks.id IN (SELECT v.id FROM v)
  ORDER BY tasks.id FOR UPDATE
), t AS (
  UPDATE tasks SET last_seq = tasks.last_seq + v.events, updated_at = $2,
    nodes_count = tasks.nodes_count + v.nodes, llm_calls = tasks.llm_calls + v.calls,
    prompt_tokens = tasks.prompt_tokens + v.prompt_tokens,
    completion_tokens = tasks.completion_tokens + v.completion_tokens,
    cost_usd = CASE WHEN v.calls > 0 AND v.cost IS NULL THEN NULL
                    ELSE tasks.cost_usd + v.cost END,
    {final_set},
    finished_at = CASE WHEN f.k IS NULL THEN tasks.finished_at ELSE $2 END,
    lease_owner = CASE WHEN f.k IS NULL THEN tasks.lease_owner END,
    lease_expires_at = CASE WHEN f.k IS NULL THEN tasks.lease_expires_at END
  FROM locked JOIN v ON v.id = locked.id
    LEFT JOIN jsonb_to_recordset($3::text::jsonb) AS f(k int, {_record(_FINAL_COLS)})
      ON f.k = v.k
  WHERE tasks.id = locked.id AND tasks.attempt = v.attempt AND tasks.lease_owner = v.owner
  RETURNING v.k, tasks.id, tasks.last_seq, tasks.cancel_requested, v.events, v.attempt
), b AS (
  INSERT INTO prompt_blocks (hash, parent, text)
  SELECT DISTINCT ON (r.hash) r.hash, r.parent, r.text
  {rows(4, "hash text, parent text, text text")}
  ORDER BY r.hash
  ON CONFLICT (hash) DO NOTHING
), n AS (
  INSERT INTO nodes (task_id, {_names(_NODE_COLS)}, updated_at)
  SELECT t.id, {_names(_NODE_COLS, "r.")}, $2 {rows(5, _record(_NODE_COLS))}
), u AS (
  UPDATE nodes SET {node_set}, updated_at = $2
  {rows(6, _record(_NODE_COLS))}
  WHERE nodes.task_id = t.id AND nodes.id = r.id
), s AS (
  INSERT INTO steps (task_id, {_names(_STEP_COLS)})
  SELECT t.id, {_names(_STEP_COLS, "r.")} {rows(7, _record(_STEP_COLS))}
), c AS (
  INSERT INTO llm_calls (task_id, {_names(_CALL_COLS)}, attempt, created_at)
  SELECT t.id, {_names(_CALL_COLS, "r.")}, t.attempt, $2 {rows(8, _record(_CALL_COLS))}
), e AS (
  INSERT INTO events (task_id, seq, type, payload, ordinal, node_id, span, packed, created_at)
  SELECT t.id, t.last_seq - t.events + r.i, r.type, r.payload, r.ordinal, r.node_id, r.span,
    decode(r.packed, 'base64'), $2
  {rows(9, "i int, type text, payload jsonb, ordinal int, node_id int, span int, packed text")}
)
SELECT k, last_seq, cancel_requested FROM t"""


GROUP_STATEMENT = _group_statement()


@dataclass
class _Write:
    task_id: str
    attempt: int
    owner: str
    batch: Batch
    values: dict[str, Any]
    now: datetime
    done: asyncio.Future[tuple[int, bool] | None]


class GroupWriter:
    """The queue of one event loop's batch writes to one engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.queue: list[_Write] = []
        self.in_flight = 0
        self.limit = max(1, min(IN_FLIGHT, write_connections(engine)))
        self._kick_due = False
        self._sending: set[asyncio.Future[None]] = set()
        #: statements sent, and the writes they carried (what the tests and benches read)
        self.statements = 0
        self.writes = 0
        #: group statements that failed, their writes then sent one by one
        self.fallbacks = 0

    def submit(self, task_id: str, attempt: int, owner: str, batch: Batch,
               values: dict[str, Any], now: datetime
               ) -> asyncio.Future[tuple[int, bool] | None]:
        loop = asyncio.get_running_loop()
        write = _Write(task_id, attempt, owner, batch, values, now, loop.create_future())
        self.queue.append(write)
        if not self._kick_due:  # the writes queued in this turn of the loop go together
            self._kick_due = True
            loop.call_soon(self._kick)
        return write.done

    def _kick(self) -> None:
        self._kick_due = False
        # a write whose writer stopped waiting before it was sent is not sent (as a
        # statement cancelled before it went out)
        self.queue = [w for w in self.queue if not w.done.cancelled()]
        while self.queue and self.in_flight < self.limit:
            group, self.queue = self.queue[:MAX_GROUP], self.queue[MAX_GROUP:]
            self.in_flight += 1
            sending = asyncio.ensure_future(self._send(group))
            self._sending.add(sending)  # (the loop keeps only a weak reference)
            sending.add_done_callback(self._sending.discard)

    async def _send(self, group: list[_Write]) -> None:
        try:
            if len(group) == 1:
                await self._alone(group[0])
            else:
                await self._together(group)
        finally:
            self.in_flight -= 1
            for write in group:  # (only when the loop stops under it) nobody waits forever
                if not write.done.done():
                    write.done.cancel()
            self._kick()

    async def _alone(self, write: _Write) -> None:
        try:
            row = await write_postgres(self.engine, write.task_id, write.attempt, write.owner,
                                       write.batch, write.values, write.now)
        except Exception as exc:  # the write's own outcome
            if not write.done.done():
                write.done.set_exception(exc)
            return
        self.statements += 1
        self.writes += 1
        if not write.done.done():
            write.done.set_result(row)

    async def _together(self, group: list[_Write]) -> None:
        try:
            found = await _write_group(self.engine, group)
        except Exception as exc:
            self.fallbacks += 1
            # each on its own: each gets its own answer, or its own error
            log.info("a group write of %d tasks failed (%s: %s); writing each alone",
                     len(group), type(exc).__name__, exc)
            for write in group:
                await self._alone(write)
            return
        self.statements += 1
        self.writes += len(group)
        for k, write in enumerate(group, start=1):
            if not write.done.done():
                write.done.set_result(found.get(k))


def _join(parts: list[bytes]) -> str:
    return (b"[" + b",".join(parts) + b"]").decode()


async def _write_group(engine: AsyncEngine, group: list[_Write]
                       ) -> dict[int, tuple[int, bool]]:
    tasks: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    kinds: list[list[bytes]] = [[], [], [], [], [], []]
    for k, w in enumerate(group, start=1):
        v = w.values
        tasks.append({"k": k, "id": w.task_id, "attempt": w.attempt, "owner": w.owner,
                      "events": len(w.batch.events), "nodes": len(w.batch.created),
                      "calls": v["calls"], "prompt_tokens": v["prompt_tokens"],
                      "completion_tokens": v["completion_tokens"], "cost": v["cost_usd"]})
        if w.batch.final is not None:
            finals.append({"k": k, **w.batch.final})
        for part, json_rows in zip(kinds, pg_rows(w.batch), strict=True):
            part.append(json_rows)
    now = max(w.now for w in group)
    args: tuple[Any, ...] = (_safe(tasks).decode(), now, _safe(finals).decode(),
                             *(_join(part) for part in kinds))
    async with write_slots(engine), engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        rows: Any = (await conn.exec_driver_sql(GROUP_STATEMENT, args)).all()
    return {int(r[0]): (int(r[1]), bool(r[2])) for r in rows}


_writers: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Any, GroupWriter]] = (
    weakref.WeakKeyDictionary())  # by event loop, by engine


def group_writer(engine: AsyncEngine) -> GroupWriter:
    """The running loop's writer for ``engine``."""
    loop = asyncio.get_running_loop()
    by_engine = _writers.get(loop)
    if by_engine is None:
        by_engine = _writers[loop] = weakref.WeakKeyDictionary()
    writer = by_engine.get(engine.sync_engine)
    if writer is None:
        writer = by_engine[engine.sync_engine] = GroupWriter(engine)
    return writer


async def write_grouped(engine: AsyncEngine, task_id: str, attempt: int, owner: str,
                        batch: Batch, values: dict[str, Any], now: datetime
                        ) -> tuple[int, bool] | None:
    """``write_postgres``'s contract, the write sent with those queued beside it."""
    return await group_writer(engine).submit(task_id, attempt, owner, batch, values, now)
