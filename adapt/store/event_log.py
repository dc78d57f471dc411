"""The event log as stored, and as read: compact rows that the readers expand.

Every event keeps its gap-free ``seq``, type, time and engine ordinal, but its payload names
what other tables already hold instead of copying it:

- ``node.created``: the node's snapshot without the fields that hold their default
  (``{"n": {...}}``; before 0020 whole: ``{"node": {...}}``);
- ``node.updated``: only the fields that changed since the node's previous event
  (``{"node_id": 7, "changed": {"status": "succeeded", ...}}``); ``events.node_id`` says which
  node, so the snapshot before any event can be rebuilt from that node's earlier events;
- ``step``: ``{"step_ref": [node_id, index]}``, the row of ``steps``;
- ``llm_call``: ``{"call_id": 12}``, the row of ``llm_calls`` (whose prompt is read through
  ``adapt.store.prompts``; the event never carried it);
- ``task.finished`` and the service's events: as they are.

The events of one write are stored in one row (:func:`group`): a row holds up to
:data:`MAX_SPAN` consecutive engine events (``span``; its ``seq`` and ``ordinal`` are its first
event's), each one short JSON entry (``["l", 12]`` for ``{"call_id": 12}``), the list
compressed (``packed``: ``adapt.store.packing``; ``payload`` is then NULL), and ``node_id``
says which node its node events are about (:data:`SEVERAL_NODES`: more than one; a reader
that rebuilds a node's snapshot reads those rows and the node's own). A row costs about 60
bytes of PostgreSQL overhead and its key in two indexes; a write of an LLM call and what
follows it (the call, its step, the node's update) was three or four rows and is now one. A
row of one event is stored as before (``span`` 1).

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

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.tree import Node
from adapt.store.elided import call_request_model, read_monitor, step_text
from adapt.store.models import EventRow, LLMCallRow, StepRow
from adapt.store.packing import pack, unpack

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
class _Event:
    """One stored event, compact (a row's share of it)."""

    seq: int
    type: str
    created_at: datetime
    ordinal: int | None
    node_id: int | None
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as the API shows it (``data``: the engine's event payload, whole)."""

    seq: int
    type: str
    created_at: datetime
    ordinal: int | None
    data: dict[str, Any]


_MISSING = object()

#: the most events one row holds (a reader looks this far back for the row that holds a seq)
MAX_SPAN = 64
#: ``events.node_id`` of a row whose node events are about several nodes (node ids start at 1)
SEVERAL_NODES = 0
#: the short entries of a grouped row: code -> (type, the compact payload's one key)
_SHORT = {"c": ("node.created", "n"), "u": ("node.updated", "changed"),
          "s": ("step", "step_ref"), "l": ("llm_call", "call_id")}
_CODE = {(type_, key): code for code, (type_, key) in _SHORT.items()}


def _entry(event_type: str, payload: dict[str, Any], several: bool) -> list[Any]:
    """One event of a grouped row: ``[code, value]`` for the compact forms (a node update in a
    row of several nodes: ``["u", changed, node id]``), else ``[type, payload]``."""
    if len(payload) == 1:
        ((key, value),) = payload.items()
        code = _CODE.get((event_type, key))
        if code is not None:
            return [code, value]
    elif (event_type == "node.updated" and len(payload) == 2 and "changed" in payload
          and "node_id" in payload):
        return ["u", payload["changed"], payload["node_id"]] if several else [
            "u", payload["changed"]]  # the node is the row's
    return [event_type, payload]


def _unentry(entry: list[Any], row_node: int | None
             ) -> tuple[str, int | None, dict[str, Any]]:
    """(type, node id for a node event, compact payload) of a grouped row's entry."""
    short = _SHORT.get(entry[0])
    if short is None:
        event_type, data = str(entry[0]), entry[1]
        node = data.get("node_id", (data.get("node") or {}).get("id"))
        return event_type, node if event_type in NODE_EVENTS else None, data
    event_type, key = short
    if event_type == "node.updated":
        node_id = int(entry[2]) if len(entry) > 2 else row_node
        return event_type, node_id, {"node_id": node_id, "changed": entry[1]}
    if event_type == "node.created":
        return event_type, int(entry[1]["id"]), {key: entry[1]}
    return event_type, None, {key: entry[1]}


def group(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows that store one write's events (each ``{"type", "payload", "ordinal",
    "node_id"}``, compact, in order): each row ``{"i": the 1-based index of its first event,
    "span", "type", "payload", "ordinal", "node_id"}``. A row holds up to :data:`MAX_SPAN`
    consecutive engine events (consecutive ordinals); its ``node_id`` is the node its node
    events are about, :data:`SEVERAL_NODES` when they are about several."""
    runs: list[list[dict[str, Any]]] = []
    run: list[dict[str, Any]] = []
    for e in events:
        ordinal = e.get("ordinal")
        if run and (len(run) >= MAX_SPAN or ordinal is None or run[-1].get("ordinal") is None
                    or ordinal != run[-1]["ordinal"] + 1):
            runs.append(run)
            run = []
        run.append(e)
    if run:
        runs.append(run)
    rows: list[dict[str, Any]] = []
    i = 1
    for run in runs:
        first = run[0]
        if len(run) == 1:
            rows.append({"i": i, "span": 1, "type": first["type"], "payload": first["payload"],
                         "ordinal": first.get("ordinal"), "node_id": first.get("node_id"),
                         "packed": None})
        else:
            nodes = {e["node_id"] for e in run if e.get("node_id") is not None}
            several = len(nodes) > 1
            rows.append({"i": i, "span": len(run), "type": first["type"], "payload": None,
                         "ordinal": first["ordinal"],
                         "node_id": SEVERAL_NODES if several else next(iter(nodes), None),
                         "packed": pack([_entry(e["type"], e["payload"], several)
                                         for e in run])})
        i += len(run)
    return rows


#: the columns :func:`expand` reads, in its order: ``select(*ROW)``
ROW = (EventRow.seq, EventRow.type, EventRow.ordinal, EventRow.node_id, EventRow.payload,
       EventRow.span, EventRow.packed)


def expand(seq: int, event_type: str, ordinal: int | None, node_id: int | None, payload: Any,
           span: int | None, packed: bytes | None = None
           ) -> list[tuple[int, str, int | None, int | None, dict[str, Any]]]:
    """The events a stored row (its :data:`ROW` columns) holds, as ``(seq, type, ordinal,
    node_id, compact payload)`` (``node_id``: the node of a node event, else None, as in a
    row of one event)."""
    if packed is not None:
        payload = unpack(packed)
    if not span or span <= 1 or not isinstance(payload, list):
        return [(seq, event_type, ordinal, node_id, payload or {})]
    out = []
    for k, entry in enumerate(payload):
        type_k, node_k, data = _unentry(entry, node_id)
        out.append((seq + k, type_k, None if ordinal is None else ordinal + k, node_k, data))
    return out


def _node_defaults() -> dict[str, Any]:
    """Every field of a node snapshot, in order: its default (JSON), or ``_MISSING`` for the
    fields without one (always stored)."""
    out: dict[str, Any] = {}
    for name, info in Node.model_fields.items():
        if info.is_required():
            out[name] = _MISSING
        else:
            value = info.get_default(call_default_factory=True)
            out[name] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return out


_NODE_DEFAULTS = _node_defaults()


def sparse_node(node: dict[str, Any]) -> dict[str, Any]:
    """A node snapshot without the fields that hold their default (:func:`whole_node`)."""
    return {k: v for k, v in node.items() if _NODE_DEFAULTS.get(k, _MISSING) != v}


def whole_node(sparse: dict[str, Any]) -> dict[str, Any]:
    """The snapshot :func:`sparse_node` was made from: every field, in the model's order."""
    out: dict[str, Any] = {}
    for k, d in _NODE_DEFAULTS.items():
        if k in sparse:
            out[k] = sparse[k]
        elif d is not _MISSING:
            out[k] = dict(d) if isinstance(d, dict) else d  # (defaults are flat)
    if len(out) < len(sparse):  # a field the model no longer has: shown as stored
        out.update((k, v) for k, v in sparse.items() if k not in out)
    return out


# -- the writer's half --------------------------------------------------------------------------
def compact(event_type: str, payload: dict[str, Any], previous: dict[str, Any] | None
            ) -> dict[str, Any]:
    """What is stored for an engine event whose whole payload is ``payload``; ``previous``: the
    node's snapshot in its previous event (for ``node.updated``)."""
    if event_type == "node.updated" and previous is not None:
        node = payload["node"]
        return {"node_id": node["id"],
                "changed": {k: v for k, v in node.items() if previous.get(k, _MISSING) != v}}
    if event_type == "node.created":
        return {"n": sparse_node(payload["node"])}
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
    if "n" in payload:  # node.created: the fields that are not the default
        snapshot: dict[str, Any] = whole_node(payload["n"])
    elif "node" in payload:  # a whole snapshot (node.created before 0020, older formats)
        snapshot = payload["node"]
    else:
        before = states.get(node_id)
        if before is None:  # the node's earlier events are missing: show what is known
            log.warning("event log: node %d updated before it was created", node_id)
            before = {"id": node_id}
        snapshot = {**before, **payload.get("changed", {})}
    states[node_id] = snapshot
    return snapshot


async def stored_events(session: AsyncSession, task_id: str
                        ) -> list[tuple[int, str, int | None, int | None, dict[str, Any]]]:
    """The task's events as stored (compact), one per event: ``(seq, type, ordinal, node_id,
    payload)`` (:func:`expand` of every row)."""
    rows = (await session.execute(
        select(*ROW).where(EventRow.task_id == task_id).order_by(EventRow.seq))).all()
    return [e for row in rows for e in expand(*row)]


def _node_events(row: Any, node_ids: set[int], after_seq: int
                 ) -> list[tuple[int, str, dict[str, Any]]]:
    """The events of a stored row about ``node_ids``, up to ``after_seq``: (node id, type,
    compact payload)."""
    out: list[tuple[int, str, dict[str, Any]]] = []
    if row.packed is not None and row.node_id == SEVERAL_NODES:
        # only the node events of these nodes: most of a row of several nodes is not
        for k, entry in enumerate(unpack(row.packed)):
            code = entry[0]
            if row.seq + k > after_seq:
                break
            if code == "u" and len(entry) > 2 and entry[2] in node_ids:
                out.append((int(entry[2]), "node.updated", {"changed": entry[1]}))
            elif code == "c" and entry[1]["id"] in node_ids:
                out.append((int(entry[1]["id"]), "node.created", {"n": entry[1]}))
            elif code not in _SHORT and code in NODE_EVENTS:  # an entry stored whole
                event_type, node_id, payload = _unentry(entry, None)
                if node_id in node_ids:
                    out.append((int(node_id), event_type, payload))
        return out
    for seq, event_type, _, node_id, payload in expand(*row):
        if seq <= after_seq and event_type in NODE_EVENTS and node_id in node_ids:
            out.append((int(node_id), event_type, payload))
    return out


#: rows a rebuild of node snapshots reads at once, going back from the page
FOLD_CHUNK = 256


async def _fold_before(session: AsyncSession, task_id: str, after_seq: int,
                       node_ids: set[int], states: NodeStates) -> None:
    """The snapshots of ``node_ids`` as of event ``after_seq``. The rows of these nodes and
    those of several nodes are read backwards from ``after_seq``, a chunk at a time, until
    each node's whole snapshot (its creation) is among them; then folded forwards."""
    found: list[list[tuple[int, str, dict[str, Any]]]] = []
    missing = set(node_ids)
    before = after_seq + 1
    while missing:
        rows = (await session.execute(
            select(*ROW)
            .where(EventRow.task_id == task_id,
                   EventRow.node_id.in_([SEVERAL_NODES, *sorted(node_ids)]),
                   EventRow.seq < before)
            .order_by(EventRow.seq.desc()).limit(FOLD_CHUNK))).all()
        for row in rows:
            events = _node_events(row, node_ids, after_seq)
            found.append(events)
            missing -= {n for n, _, payload in events if "n" in payload or "node" in payload}
        if len(rows) < FOLD_CHUNK:
            break
        before = rows[-1].seq
    for events in reversed(found):
        for node_id, event_type, payload in events:
            _apply(states, node_id, event_type, payload)


#: rows read at once for a page of ``limit`` events: a row holds about four (one write)
ROWS_PER_EVENT = 0.3


async def _page(session: AsyncSession, task_id: str, after_seq: int, limit: int | None
                ) -> list[_Event]:
    """The stored events with ``seq > after_seq``, at most ``limit``, compact; the rows are
    read a few at a time (a page rarely needs as many rows as events)."""
    out: list[_Event] = []
    # the row that holds the event after ``after_seq`` may start up to MAX_SPAN - 1 before it
    where = [EventRow.task_id == task_id, EventRow.seq > after_seq - MAX_SPAN,
             EventRow.seq + EventRow.span > after_seq + 1]
    while True:
        stmt = select(*ROW, EventRow.created_at).where(*where).order_by(EventRow.seq)
        chunk = None if limit is None else max(1, int((limit - len(out)) * ROWS_PER_EVENT) + 1)
        if chunk is not None:
            stmt = stmt.limit(chunk)
        rows = (await session.execute(stmt)).all()
        for *stored, created in rows:
            out += [_Event(seq, type_, created, ordinal, node_id, payload)
                    for seq, type_, ordinal, node_id, payload in expand(*stored)
                    if seq > after_seq]
        if limit is None or len(out) >= limit or len(rows) < (chunk or 0) or not rows:
            break
        where = [EventRow.task_id == task_id, EventRow.seq > rows[-1].seq]
    if limit is not None:
        del out[limit:]
    return out


async def read_events(session: AsyncSession, task_id: str, after_seq: int,
                      limit: int | None, *, states: NodeStates | None = None
                      ) -> list[StoredEvent]:
    """The task's events with ``seq > after_seq``, oldest first, at most ``limit`` (None: all),
    each whole. ``states`` carries node snapshots from one call to the next (a stream reading
    page after page passes the same dict); without it they are rebuilt from the log."""
    rows = await _page(session, task_id, after_seq, limit)
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
            if ("node" not in payload and "n" not in payload and row.node_id not in seen
                    and row.node_id not in states):
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
    columns = [call_request_model(LLMCallRow.request_model, LLMCallRow.model)
               if f == "request_model" else getattr(LLMCallRow, f) for f in _CALL_FIELDS]
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
            call["monitor"] = read_monitor(call["monitor"])
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
    columns = [step_text(StepRow.text, StepRow.raw) if f == "text" else getattr(StepRow, f)
               for f in _STEP_FIELDS]
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
