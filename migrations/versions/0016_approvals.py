"""approvals: the points where a task waits for a person, and the decisions; tasks.forked_from_*
and fork_calls: a fork's origin (issue 30)

A task that asks for approval (``run_config.approval``) stops at each plan (or named action)
until a decision is stored here; the task's status is then ``waiting`` (no lease, no worker)
and a node's ``awaiting_approval``: 17 characters, so ``nodes.status`` widens from 16 to 32 on
PostgreSQL (an in-place ALTER). SQLite does not enforce a VARCHAR's length and keeps its
declaration (changing it would copy ``nodes``, whose drop cascades to ``steps``).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 13:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import adapt.store.models

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
UTC = adapt.store.models.UTCDateTime(timezone=True)


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    op.add_column("tasks", sa.Column("forked_from_task", sa.String(length=32), nullable=True))
    op.add_column("tasks", sa.Column("forked_from_node", sa.Integer(), nullable=True))
    op.add_column("tasks", sa.Column("fork_calls", sa.Integer(), nullable=True))
    if _postgresql():
        op.alter_column("nodes", "status", type_=sa.String(length=32),
                        existing_type=sa.String(length=16), existing_nullable=False)
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("task_id", sa.String(length=32), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("proposal", JSONType, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("edited", JSONType, nullable=True),
        sa.Column("changes", JSONType, nullable=True),
        sa.Column("decided_by", sa.String(length=64), nullable=True),
        sa.Column("decided_tenant", sa.String(length=128), nullable=True),
        sa.Column("requested_at", UTC, nullable=False),
        sa.Column("decided_at", UTC, nullable=True),
        sa.Column("deadline_at", UTC, nullable=True),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("task_id", "node_id", "kind", "number", name="uq_approvals_point"),
    )
    op.create_index("ix_approvals_task_status", "approvals", ["task_id", "status"])
    op.create_index(op.f("ix_approvals_deadline_at"), "approvals", ["deadline_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_approvals_deadline_at"), table_name="approvals")
    op.drop_index("ix_approvals_task_status", table_name="approvals")
    op.drop_table("approvals")
    if _postgresql():
        op.execute("UPDATE nodes SET status = 'pending' WHERE status = 'awaiting_approval'")
        op.alter_column("nodes", "status", type_=sa.String(length=16),
                        existing_type=sa.String(length=32), existing_nullable=False)
    op.drop_column("tasks", "fork_calls")
    op.drop_column("tasks", "forked_from_node")
    op.drop_column("tasks", "forked_from_task")
