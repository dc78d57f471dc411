"""workers (live worker processes, from their heartbeats); llm_calls.retries

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import adapt.store.models

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("queue", sa.String(length=255), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("running", sa.Integer(), nullable=False),
        sa.Column("started_at", adapt.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", adapt.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", adapt.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_workers_queue"), "workers", ["queue"], unique=False)
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retries", sa.Integer(), server_default="0",
                                      nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.drop_column("retries")
    op.drop_index(op.f("ix_workers_queue"), table_name="workers")
    op.drop_table("workers")
