"""A task's rows as plain data and back: what an archive holds (``adapt.service.archive`` makes
the document and checks one before it is loaded).

An export reads the task row, its nodes, steps, LLM calls, events, approval requests with their
decisions, and the prompt blocks of its calls' chains (parents first), each row as a dict of
its columns (times as ISO 8601). An import inserts them under a new task id and the importer's
tenant, in one transaction: blocks already stored are left as they are (a block is addressed by
its content), the rest go in before the calls that name them; each approval gets a new id (ids
are unique across tasks), and the events that name it name the new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Table, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.store.elided import (
    plan_call,
    stored_call,
    stored_plan,
    stored_step,
    whole_call,
    whole_plan,
    whole_step,
)
from adapt.store.event_log import ROW, expand, whole_node
from adapt.store.models import (
    TASK_TABLE,
    ApprovalRow,
    EventRow,
    LLMCallRow,
    NodeRow,
    PromptBlock,
    StepRow,
)
from adapt.store.prompts import chain_blocks

#: task columns an archive leaves out: whose the task is, a worker's lease on it, and whether
#: this deployment's /metrics running totals hold it (an imported task is not in the others')
TASK_PRIVATE = frozenset({"tenant", "idempotency_key", "request_hash", "lease_owner",
                          "lease_expires_at", "heartbeat_at", "metrics_folded"})
#: the archive's sections: name -> table (rows keyed by the task id carry no ``task_id``)
SECTIONS: dict[str, Table] = {
    "nodes": NodeRow.__table__,  # type: ignore[dict-item]
    "steps": StepRow.__table__,  # type: ignore[dict-item]
    "calls": LLMCallRow.__table__,  # type: ignore[dict-item]
    "prompt_blocks": PromptBlock.__table__,  # type: ignore[dict-item]
    "events": EventRow.__table__,  # type: ignore[dict-item]
    "approvals": ApprovalRow.__table__,  # type: ignore[dict-item]
}
_ORDER = {"nodes": ("id",), "steps": ("node_id", "index"), "calls": ("id",), "events": ("seq",),
          "approvals": ("requested_at", "node_id", "kind", "number")}
#: an archive holds every value whole, where a table stores one that its row holds already
#: as NULL (``adapt.store.elided``): how a section's rows are read and stored, and the
#: columns that an archive's rows must have though the table's may be NULL
_WHOLE = {"steps": whole_step, "calls": whole_call}
_STORED = {"steps": stored_step, "calls": stored_call}
ARCHIVED_WHOLE = {"steps": frozenset({"text"})}
#: the events that name an approval (``approval_id`` in their data)
APPROVAL_EVENTS = frozenset({"approval.requested", "approval.decided"})


def task_columns() -> list[Column[Any]]:
    return [c for c in TASK_TABLE.columns if c.key not in TASK_PRIVATE]


#: columns of how rows are stored, not of what they hold: an archive has one event per row
#: (``events.span``, ``events.packed``: a stored row may hold several; ``adapt.store.event_log``)
_STORAGE_ONLY = frozenset({"task_id", "span", "packed"})


def section_columns(section: str) -> list[Column[Any]]:
    return [c for c in SECTIONS[section].columns if c.key not in _STORAGE_ONLY]


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _rows(result: Sequence[Any], columns: Sequence[Column[Any]]) -> list[dict[str, Any]]:
    return [{c.key: _plain(v) for c, v in zip(columns, row, strict=True)} for row in result]


async def read_task(session: AsyncSession, task_id: str) -> dict[str, Any]:
    """The task's row and every section, as plain data."""
    columns = task_columns()
    found = (await session.execute(select(*columns).where(TASK_TABLE.c.id == task_id))).all()
    if not found:
        raise LookupError(task_id)
    out: dict[str, Any] = {"task": _rows(found, columns)[0]}
    for section, table in SECTIONS.items():
        columns = section_columns(section)
        if section == "prompt_blocks":
            out[section] = await _blocks(session, task_id)
            continue
        if section == "events":
            out[section] = await _events(session, task_id)
            continue
        stmt = select(*columns).where(table.c.task_id == task_id)
        stmt = stmt.order_by(*(table.c[k] for k in _ORDER[section]))
        read = _rows((await session.execute(stmt)).all(), columns)
        whole = _WHOLE.get(section)
        out[section] = [whole(r) for r in read] if whole is not None else read
    completions = {c["id"]: c["completion"] for c in out["calls"]}
    for node in out["nodes"]:
        call = plan_call(node["plan"])
        if call is not None and call in completions:
            node["plan"] = whole_plan(node["plan"], completions[call])
    return out


async def _events(session: AsyncSession, task_id: str) -> list[dict[str, Any]]:
    """The task's events, one per row (a stored row of several events is split)."""
    e = EventRow
    rows = (await session.execute(
        select(*ROW, e.created_at)
        .where(e.task_id == task_id).order_by(e.seq))).all()
    return [{"seq": seq, "type": type_, "payload": _whole_created(payload), "ordinal": ordinal,
             "node_id": node_id, "created_at": _plain(created)}
            for *stored, created in rows
            for seq, type_, ordinal, node_id, payload in expand(*stored)]


def _whole_created(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``node.created`` payload as archives hold it (the snapshot whole, as releases before
    the sparse snapshot read it)."""
    if len(payload) == 1 and "n" in payload:
        return {"node": whole_node(payload["n"])}
    return payload


async def _blocks(session: AsyncSession, task_id: str) -> list[dict[str, Any]]:
    hashes = await chain_blocks(session, [task_id])
    if not hashes:
        return []
    table = SECTIONS["prompt_blocks"]
    rows = (await session.execute(select(table.c.hash, table.c.parent, table.c.text)
                                  .where(table.c.hash.in_(hashes)))).all()
    return parents_first([{"hash": h, "parent": p, "text": t} for h, p, t in rows])


def parents_first(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``blocks`` ordered so that every block comes after its parent (when it is among
    them); the order is otherwise by hash."""
    by_hash = {str(b["hash"]): dict(b) for b in blocks}
    out: list[dict[str, Any]] = []
    placed: set[str] = set()
    for start in sorted(by_hash):
        path: list[str] = []
        at: str | None = start
        while at is not None and at in by_hash and at not in placed and at not in path:
            path.append(at)
            at = by_hash[at]["parent"]
        for h in reversed(path):
            placed.add(h)
            out.append(by_hash[h])
    return out


async def insert_task(session: AsyncSession, task_id: str, tenant: str,
                      document: Mapping[str, Any]) -> None:
    """Insert the archive's rows (checked, with Python values) as task ``task_id`` of
    ``tenant``, in the caller's transaction."""
    row = {**document["task"], "id": task_id, "tenant": tenant}
    await session.execute(insert(TASK_TABLE), [row])
    blocks = document["prompt_blocks"]
    if blocks:
        dialect = session.get_bind().dialect.name
        block_insert = (pg_insert if dialect == "postgresql" else sqlite_insert)(
            SECTIONS["prompt_blocks"]).on_conflict_do_nothing(index_elements=["hash"])
        # parents first: the foreign key checks each row's parent as it goes in
        await session.execute(block_insert, parents_first(blocks))
    approvals = document.get("approvals") or []
    renamed = {str(r["id"]): uuid.uuid4().hex for r in approvals}
    events = [_renamed_event(e, renamed) for e in document["events"]]
    sections = {**document, "events": events, "approvals": [
        # nothing of a finished task waits: a pending request keeps no deadline
        {**r, "id": renamed[str(r["id"])],
         "deadline_at": r.get("deadline_at") if r.get("status") != "pending" else None}
        for r in approvals]}
    calls: dict[Any, dict[str, int]] = {}  # node -> {completion: the last such call's id}
    for call in sorted(document["calls"], key=lambda c: c["id"]):
        calls.setdefault(call["node_id"], {})[call["completion"]] = call["id"]
    sections["nodes"] = [{**n, "plan": stored_plan(n.get("plan"), calls.get(n["id"], {}))}
                         for n in document["nodes"]]
    for section in ("nodes", "steps", "calls", "events", "approvals"):
        stored = _STORED.get(section)
        rows = [{**(stored(r) if stored is not None else r), "task_id": task_id}
                for r in sections[section]]
        if rows:
            await session.execute(insert(SECTIONS[section]), rows)


def _renamed_event(event: Mapping[str, Any], renamed: Mapping[str, str]) -> dict[str, Any]:
    """``event`` naming the imported approvals by their new ids."""
    payload = event.get("payload")
    if event.get("type") not in APPROVAL_EVENTS or not isinstance(payload, Mapping):
        return dict(event)
    old = payload.get("approval_id")
    if not isinstance(old, str) or old not in renamed:
        return dict(event)
    return {**event, "payload": {**payload, "approval_id": renamed[old]}}

