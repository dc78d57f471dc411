"""Prompts stored once, as content-addressed blocks (prompt_blocks, llm_calls.prompt_ref)

Every stored prompt (llm_calls.prompt, or .messages) is cut into blocks the way the sink cuts
new ones (adapt.store.prompts), the blocks are inserted once, and the call keeps the ref of its
last block instead of the text. The downgrade writes the texts back inline.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 16:30:00
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from adapt.store.prompts import PromptWriter, decode, encode

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def upgrade() -> None:
    op.create_table(
        "prompt_blocks",
        sa.Column("hash", sa.String(length=32), nullable=False),
        sa.Column("parent", sa.String(length=32), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("hash"),
    )
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.add_column(sa.Column("prompt_ref", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("chat", sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    conn = op.get_bind()
    # whether a call sent chat messages (the GenAI operation) stays readable without them
    conn.execute(sa.text("UPDATE llm_calls SET chat = :yes WHERE messages IS NOT NULL"),
                 {"yes": True})
    known: set[str] = set()
    writers: dict[str, PromptWriter] = {}
    after = ("", -1)
    while True:  # keyset pages over (task_id, id), so any number of rows fits in memory
        rows = conn.execute(sa.text(
            "SELECT task_id, id, node_id, role, prompt, messages FROM llm_calls "
            "WHERE (prompt IS NOT NULL OR messages IS NOT NULL) "
            "AND (task_id > :t OR (task_id = :t AND id > :i)) ORDER BY task_id, id LIMIT :n"),
            {"t": after[0], "i": after[1], "n": BATCH}).all()
        if not rows:
            break
        blocks: dict[str, dict[str, Any]] = {}
        refs = []
        for task_id, call_id, node_id, role, prompt, messages in rows:
            document = encode(prompt, _json(messages))
            if document is None:
                continue
            writer = writers.setdefault(task_id, PromptWriter(known))
            refs.append({"t": task_id, "i": call_id,
                         "r": writer.add(node_id, role, document, blocks)})
        if blocks:
            conn.execute(sa.text(
                "INSERT INTO prompt_blocks (hash, parent, text) VALUES (:hash, :parent, :text)"),
                list(blocks.values()))
            known.update(blocks)
        conn.execute(sa.text(
            "UPDATE llm_calls SET prompt_ref = :r, prompt = NULL, messages = NULL "
            "WHERE task_id = :t AND id = :i"), refs)
        after = (rows[-1][0], rows[-1][1])
        if len(writers) > 1000:
            writers.clear()  # a task's rows are contiguous: earlier writers are done


def downgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT task_id, id, prompt_ref FROM llm_calls WHERE prompt_ref IS NOT NULL")).all()
    blocks = {str(h): (p, str(t)) for h, p, t in conn.execute(sa.text(
        "SELECT hash, parent, text FROM prompt_blocks")).all()}
    updates = []
    for task_id, call_id, ref in rows:
        parts, at = [], ref
        while at is not None and at in blocks:
            parent, piece = blocks[at]
            parts.append(piece)
            at = parent
        if at is not None:
            continue  # an incomplete chain: the text is lost either way
        prompt, messages = decode("".join(reversed(parts)))
        updates.append({"t": task_id, "i": call_id, "p": prompt,
                        "m": None if messages is None else json.dumps(messages)})
    if updates:
        messages = "CAST(:m AS JSONB)" if conn.dialect.name == "postgresql" else ":m"
        conn.execute(sa.text(
            f"UPDATE llm_calls SET prompt = :p, messages = {messages} "
            "WHERE task_id = :t AND id = :i"), updates)
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.drop_column("prompt_ref")
        batch_op.drop_column("chat")
    op.drop_table("prompt_blocks")
