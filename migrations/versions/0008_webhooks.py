"""webhook_endpoints and webhook_deliveries (signed webhooks, issue 21)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import adapt.store.models

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
UTC = adapt.store.models.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("task_id", sa.String(length=32), nullable=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", JSONType, nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=True),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("disabled_at", UTC, nullable=True),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_webhook_endpoints_tenant"), "webhook_endpoints", ["tenant"])
    op.create_index(op.f("ix_webhook_endpoints_task_id"), "webhook_endpoints", ["task_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("task_id", sa.String(length=32), nullable=False),
        sa.Column("endpoint_id", sa.String(length=32), nullable=False),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("event_key", sa.String(length=64), nullable=False),
        sa.Column("payload", JSONType, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTC, nullable=False),
        sa.Column("locked_until", UTC, nullable=True),
        sa.Column("locked_by", sa.String(length=255), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("log", JSONType, nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("delivered_at", UTC, nullable=True),
        sa.ForeignKeyConstraint(["endpoint_id"], ["webhook_endpoints.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries",
                    ["status", "next_attempt_at"])
    op.create_index("ix_webhook_deliveries_task", "webhook_deliveries",
                    ["task_id", "created_at"])
    op.create_index(op.f("ix_webhook_deliveries_endpoint_id"), "webhook_deliveries",
                    ["endpoint_id"])


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_index(op.f("ix_webhook_endpoints_task_id"), table_name="webhook_endpoints")
    op.drop_index(op.f("ix_webhook_endpoints_tenant"), table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
