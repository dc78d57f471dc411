"""events.span, events.packed: a row of the event log may hold several events, compressed

The events of one write are stored in one row (``adapt.store.event_log.group``): ``span`` says how many consecutive events a row holds (its
``seq`` and ``ordinal`` are the first's), its events are a list of short entries, compressed
in ``packed`` (``adapt.store.packing``; ``payload``, now nullable, is then NULL), and
``node_id`` is the node its node events are about (0: several). Rows
written before this revision hold one event each (``span`` 1) and read as they are. A
``node.created`` payload now holds the fields of the snapshot that are not their default
(``{"n": {...}}``; before: ``{"node": {...}}``, which still reads). The downgrade splits every
row of several events into rows of one and writes every snapshot whole, the payloads the code
of 0011-0019 reads.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 16:30:00
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# the stored bytes' format is versioned and never changes (``adapt.store.packing``)
from adapt.store.packing import unpack

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

#: a grouped row's short entries: code -> (type, the compact payload's one key), as
#: ``adapt.store.event_log`` writes them (kept here: a migration reads what it was written for)
_SHORT = {"c": ("node.created", "n"), "u": ("node.updated", "changed"),
          "s": ("step", "step_ref"), "l": ("llm_call", "call_id")}
_NODE_EVENTS = ("node.created", "node.updated")
_REQUIRED = object()
#: a node snapshot's fields in order, and their defaults as of this revision (a ``node.created``
#: payload ``{"n": ...}`` holds the fields that are not their default)
_NODE_FIELDS: dict[str, Any] = {
    "kind": "task", "id": _REQUIRED, "parent_id": None, "position": 0, "depth": 1,
    "goal": _REQUIRED, "logic": None, "status": "pending", "executor_success": None,
    "self_assessed": None, "claim": None, "verdict": None, "evidence": None, "success": None,
    "reward": None, "termination": None, "plan": None, "context_in": None,
    "context_out": None, "steps_count": 0,
    "usage": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0},
    "error": None, "label": None, "reason": None, "reused": None,
}


def _whole(sparse: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, d in _NODE_FIELDS.items():
        if k in sparse:
            out[k] = sparse[k]
        elif d is not _REQUIRED:
            out[k] = dict(d) if isinstance(d, dict) else d  # (defaults are flat)
    out.update((k, v) for k, v in sparse.items() if k not in out)
    return out


def _older(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload as the code before this revision reads it."""
    if len(payload) == 1 and "n" in payload:
        return {"node": _whole(payload["n"])}
    return payload


def upgrade() -> None:
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("span", sa.Integer(), server_default="1",
                                      nullable=False))
        batch_op.add_column(sa.Column("packed", sa.LargeBinary(), nullable=True))
        batch_op.alter_column("payload", existing_type=JSONType, nullable=True)


def _split(conn: sa.Connection) -> None:
    """Every row of several events written as rows of one (compact payloads), and every
    node snapshot whole."""
    rows = conn.execute(sa.text(
        "SELECT task_id, seq, ordinal, node_id, packed, span, created_at FROM events "
        "WHERE span > 1 ORDER BY task_id, seq")).all()
    jsonb = "CAST(:payload AS JSONB)" if conn.dialect.name == "postgresql" else ":payload"
    for task_id, seq, ordinal, node_id, packed, _span, created in rows:
        entries = unpack(bytes(packed))
        singles: list[dict[str, Any]] = []
        for k, (code, value, *node) in enumerate(entries):
            if code in _SHORT:
                type_, key = _SHORT[code]
                of = None
                if type_ == "node.updated":  # the row's node, or its own (a row of several)
                    of = int(node[0]) if node else node_id
                    data = {"node_id": of, "changed": value}
                else:
                    data = {key: value}
                    of = int(value["id"]) if type_ == "node.created" else None
            else:
                type_, data = code, value
                of = data.get("node_id", (data.get("node") or {}).get("id"))
            singles.append({"t": task_id, "seq": seq + k, "type": type_,
                            "payload": json.dumps(_older(data)),
                            "ordinal": None if ordinal is None else ordinal + k,
                            "node_id": of if type_ in _NODE_EVENTS else None,
                            "created_at": created})
        conn.execute(sa.text("DELETE FROM events WHERE task_id = :t AND seq = :s"),
                     {"t": task_id, "s": seq})
        conn.execute(sa.text(
            "INSERT INTO events (task_id, seq, type, payload, ordinal, node_id, created_at, "
            f"span) VALUES (:t, :seq, :type, {jsonb}, :ordinal, :node_id, :created_at, 1)"),
            singles)
    created = conn.execute(sa.text(
        "SELECT task_id, seq, payload FROM events WHERE type = 'node.created' AND span = 1")
    ).all()
    updates = []
    for task_id, seq, payload in created:
        data = json.loads(payload) if isinstance(payload, str) else payload
        if isinstance(data, dict) and len(data) == 1 and "n" in data:
            updates.append({"t": task_id, "s": seq, "payload": json.dumps(_older(data))})
    if updates:
        conn.execute(sa.text(f"UPDATE events SET payload = {jsonb} "
                             "WHERE task_id = :t AND seq = :s"), updates)


def downgrade() -> None:
    _split(op.get_bind())
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.alter_column("payload", existing_type=JSONType, nullable=False)
        batch_op.drop_column("packed")
        batch_op.drop_column("span")
