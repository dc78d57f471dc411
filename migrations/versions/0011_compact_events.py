"""events.node_id and its index: compact event payloads (adapt.store.event_log)

New events name the rows they describe (a step, an LLM call) and a node update keeps only what
changed since the node's previous event; readers rebuild the whole payload. ``node_id`` says
which node a node event is about, so the snapshot before any event can be rebuilt from that
node's earlier events (the partial index). Existing rows keep their whole payloads, which
read as they are; their ``node_id`` is filled in here. The downgrade writes every compact
payload whole again.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 18:30:00
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NODE_EVENTS = "('node.created', 'node.updated')"


def upgrade() -> None:
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("node_id", sa.Integer(), nullable=True))
    conn = op.get_bind()
    node_id = ("CAST(payload -> 'node' ->> 'id' AS INTEGER)" if conn.dialect.name == "postgresql"
               else "CAST(json_extract(payload, '$.node.id') AS INTEGER)")
    conn.execute(sa.text(f"UPDATE events SET node_id = {node_id} WHERE type IN {NODE_EVENTS}"))
    op.create_index("ix_events_task_node", "events", ["task_id", "node_id", "seq"],
                    unique=False, postgresql_where=sa.text("node_id IS NOT NULL"),
                    sqlite_where=sa.text("node_id IS NOT NULL"))


_CALL_FIELDS = ("id", "node_id", "role", "model", "simulated", "stop", "completion",
                "prompt_tokens", "completion_tokens", "usage_estimated", "latency_s",
                "cost_usd", "monitor", "retries")
_STEP_FIELDS = ("kind", "node_id", "index", "raw", "text", "observation", "reward", "done",
                "error", "extra")
_STEP_COLUMNS = ", ".join(f'"{c}"' for c in _STEP_FIELDS)  # "index" is a keyword


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _whole_payloads(conn: sa.Connection) -> None:
    """Every compact payload written whole again (what the code before 0011 reads)."""
    tasks = conn.execute(sa.text(
        "SELECT DISTINCT task_id FROM events WHERE node_id IS NOT NULL OR type IN "
        "('step', 'llm_call')")).scalars().all()
    jsonb = "CAST(:p AS JSONB)" if conn.dialect.name == "postgresql" else ":p"
    for task_id in tasks:
        calls = {int(r[0]): dict(zip(_CALL_FIELDS, r, strict=True)) for r in conn.execute(
            sa.text(f"SELECT {', '.join(_CALL_FIELDS)} FROM llm_calls WHERE task_id = :t"),
            {"t": task_id}).all()}
        steps = {(int(r[1]), int(r[2])): dict(zip(_STEP_FIELDS, r, strict=True))
                 for r in conn.execute(sa.text(
                     f"SELECT {_STEP_COLUMNS} FROM steps WHERE task_id = :t"),
                     {"t": task_id}).all()}
        nodes: dict[int, dict[str, Any]] = {}
        updates = []
        for seq, type_, payload in conn.execute(sa.text(
                "SELECT seq, type, payload FROM events WHERE task_id = :t ORDER BY seq"),
                {"t": task_id}).all():
            data = _json(payload) or {}
            whole = None
            if type_ in ("node.created", "node.updated"):
                if "node" in data:
                    nodes[int(data["node"]["id"])] = data["node"]
                else:
                    node_id = int(data["node_id"])
                    nodes[node_id] = {**nodes.get(node_id, {"id": node_id}), **data["changed"]}
                    whole = {"node": nodes[node_id]}
            elif type_ == "step" and "step_ref" in data:
                step = dict(steps.get(tuple(data["step_ref"]), {}))
                step["extra"] = _json(step.get("extra"))
                whole = {"step": step}
            elif type_ == "llm_call" and "call_id" in data:
                call = dict(calls.get(int(data["call_id"]), {}))
                for key in ("stop", "monitor"):
                    call[key] = _json(call.get(key))
                call["stop"] = call.get("stop") or []
                whole = {"call": {**call, "prompt": None, "messages": None}}
            if whole is not None:
                updates.append({"t": task_id, "s": seq, "p": json.dumps(whole)})
        if updates:
            conn.execute(sa.text(f"UPDATE events SET payload = {jsonb} "
                                 "WHERE task_id = :t AND seq = :s"), updates)


def downgrade() -> None:
    _whole_payloads(op.get_bind())
    op.drop_index("ix_events_task_node", table_name="events",
                  postgresql_where=sa.text("node_id IS NOT NULL"),
                  sqlite_where=sa.text("node_id IS NOT NULL"))
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_column("node_id")
