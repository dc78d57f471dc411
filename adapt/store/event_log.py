"""The event log as stored, and as read: compact rows that the readers expand.

Every event keeps its gap-free ``seq``, type, time and engine ordinal, but its payload names
what other tables already hold instead of copying it:

- ``node.created``: the node's snapshot, whole (``{"node": {...}}``);
- ``node.updated``: only the fields that changed since the node's previous event
  (``{"node_id": 7, "changed": {"status": "succeeded", ...}}``); ``events.node_id`` says which
  node, so the snapshot before any event can be rebuilt from that node's earlier events;
- ``step``: ``{"step_ref": [node_id, index]}``, the row of ``steps``;
- ``llm_call``: ``{"call_id": 12}``, the row of ``llm_calls`` (whose prompt is read through
  ``adapt.store.prompts``; the event never carried it);
- ``task.finished`` and the service's events: as they are.

:func:`read_events` gives every reader (the JSON pages, the SSE stream, trace export) the events
whole, exactly as the engine emitted them; rows written before this format (whole payloads)
read as they are. :func:`compact` is the writer's half (the ``DbSink``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.store.models import EventRow, LLMCallRow, StepRow

log = logging.getLogger(__name__)

NODE_EVENTS = ("node.created", "node.updated")
#: the columns of ``llm_calls`` an ``llm_call`` event shows (``LLMCall`` without its prompt)
_CALL_FIELDS = ("id", "node_id", "role", "model", "simulated", "stop", "completion",
                "prompt_tokens", "completion_tokens", "usage_estimated", "latency_s",
                "cost_usd", "monitor", "retries", "request_model", "response")
_STEP_FIELDS = ("kind", "node_id", "index", "raw", "text", "observation", "reward", "done",
                "error", "extra")

#: node id -> the node's latest snapshot (JSON), as a reader has folded it so far
NodeStates = dict[int, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as the API shows it (``data``: the engine's event payload, whole)."""

    seq: int
    type: str
    created_at: datetime
    ordinal: int | None
    data: dict[str, Any]


_MISSING = object()


# -- the writer's half --------------------------------------------------------------------------
def compact(event_type: str, payload: dict[str, Any], previous: dict[str, Any] | None
            ) -> dict[str, Any]:
    """What is stored for an engine event whose whole payload is ``payload``; ``previous``: the
    node's snapshot in its previous event (for ``node.updated``)."""
    if event_type == "node.updated" and previous is not None:
        node = payload["node"]
        return {"node_id": node["id"],
                "changed": {k: v for k, v in node.items() if previous.get(k, _MISSING) != v}}
    if event_type == "step":
        step = payload["step"]
        return {"step_ref": [step["node_id"], step["index"]]}
    if event_type == "llm_call":
        return {"call_id": payload["call"]["id"]}
    return payload


# -- the readers' half --------------------------------------------------------------------------
def _apply(states: NodeStates, node_id: int, event_type: str, payload: dict[str, Any]
           ) -> dict[str, Any]:
    """Fold one node event into ``states``; returns the node's snapshot after it."""
    if "node" in payload:  # node.created, or a whole snapshot (rows of the older format)
        snapshot: dict[str, Any] = payload["node"]
    else:
        before = states.get(node_id)
        if before is None:  # the node's earlier events are missing: show what is known
            log.warning("event log: node %d updated before it was created", node_id)
            before = {"id": node_id}
        snapshot = {**before, **payload.get("changed", {})}
    states[node_id] = snapshot
    return snapshot


async def _fold_before(session: AsyncSession, task_id: str, after_seq: int,
                       node_ids: set[int], states: NodeStates) -> None:
    """The snapshots of ``node_ids`` as of event ``after_seq`` (one statement)."""
    rows = (await session.execute(
        select(EventRow.node_id, EventRow.type, EventRow.payload)
        .where(EventRow.task_id == task_id, EventRow.node_id.in_(sorted(node_ids)),
               EventRow.seq <= after_seq)
        .order_by(EventRow.seq))).all()
    for node_id, event_type, payload in rows:
        if event_type in NODE_EVENTS:
            _apply(states, int(node_id), event_type, payload or {})


async def read_events(session: AsyncSession, task_id: str, after_seq: int,
                      limit: int | None, *, states: NodeStates | None = None
                      ) -> list[StoredEvent]:
    """The task's events with ``seq > after_seq``, oldest first, at most ``limit`` (None: all),
    each whole. ``states`` carries node snapshots from one call to the next (a stream reading
    page after page passes the same dict); without it they are rebuilt from the log."""
    stmt = (select(EventRow.seq, EventRow.type, EventRow.created_at, EventRow.ordinal,
                   EventRow.node_id, EventRow.payload)
            .where(EventRow.task_id == task_id, EventRow.seq > after_seq)
            .order_by(EventRow.seq))
    if limit is not None:
        stmt = stmt.limit(limit)
    rows: Sequence[Any] = (await session.execute(stmt)).all()
    if not rows:
        return []
    states = {} if states is None else states
    call_ids: list[int] = []
    step_refs: list[tuple[int, int]] = []
    unknown: set[int] = set()
    seen: set[int] = set()
    for row in rows:
        payload = row.payload or {}
        if row.type in NODE_EVENTS and row.node_id is not None:
            if "node" not in payload and row.node_id not in seen and row.node_id not in states:
                unknown.add(row.node_id)
            seen.add(row.node_id)
        elif row.type == "llm_call" and "call_id" in payload:
            call_ids.append(int(payload["call_id"]))
        elif row.type == "step" and "step_ref" in payload:
            node_id, index = payload["step_ref"]
            step_refs.append((int(node_id), int(index)))
    if unknown:
        await _fold_before(session, task_id, after_seq, unknown, states)
    calls = await _calls(session, task_id, call_ids)
    steps = await _steps(session, task_id, step_refs)

    out: list[StoredEvent] = []
    for row in rows:
        payload = row.payload or {}
        data = payload
        if row.type in NODE_EVENTS:
            node_id = row.node_id if row.node_id is not None else int(payload["node"]["id"])
            data = {"node": _apply(states, node_id, row.type, payload)}
        elif row.type == "llm_call" and "call_id" in payload:
            data = {"call": calls[int(payload["call_id"])]}
        elif row.type == "step" and "step_ref" in payload:
            data = {"step": steps[(int(payload["step_ref"][0]), int(payload["step_ref"][1]))]}
        out.append(StoredEvent(row.seq, row.type, row.created_at, row.ordinal, data))
    return out


#: a page's calls and steps are read by the range of their keys when the keys lie close (a page
#: names neighbours: two bound parameters, not one per row; what it did not name is dropped),
#: else by naming them
RANGE_SLACK = 64
async def _calls(session: AsyncSession, task_id: str, ids: list[int]
                 ) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    wanted = set(ids)
    columns = [getattr(LLMCallRow, f) for f in _CALL_FIELDS]
    low, high = min(wanted), max(wanted)  # calls are numbered in time order, like events
    which = (LLMCallRow.id.between(low, high) if high - low < 4 * len(wanted) + RANGE_SLACK
             else LLMCallRow.id.in_(sorted(wanted)))
    rows = (await session.execute(select(*columns).where(LLMCallRow.task_id == task_id,
                                                         which))).all()
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r[0] in wanted:
            call = dict(zip(_CALL_FIELDS, r, strict=True))
            call["stop"] = call["stop"] or []
            calls = (call.pop("response") or {}).get("tool_calls")  # kept with the response
            out[int(call["id"])] = {**call, "prompt": None, "messages": None, "tools": None,
                                    "tool_calls": calls or None}
    return out


async def _steps(session: AsyncSession, task_id: str, refs: list[tuple[int, int]]
                 ) -> dict[tuple[int, int], dict[str, Any]]:
    if not refs:
        return {}
    wanted = set(refs)
    nodes = {node_id for node_id, _ in wanted}
    columns = [getattr(StepRow, f) for f in _STEP_FIELDS]
    low, high = min(nodes), max(nodes)
    which = (StepRow.node_id.between(low, high) if high - low < 4 * len(nodes) + RANGE_SLACK
             else StepRow.node_id.in_(sorted(nodes)))  # far apart: name them
    rows = (await session.execute(select(*columns).where(StepRow.task_id == task_id,
                                                         which))).all()
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for r in rows:
        key = (int(r[1]), int(r[2]))  # node_id, index
        if key in wanted:
            out[key] = dict(zip(_STEP_FIELDS, r, strict=True))
    return out
