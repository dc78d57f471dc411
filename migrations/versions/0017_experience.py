"""library_entries: the experience library (issue 31); nodes.reused: a node solved by a replay

``library_entries`` holds each tenant's verified sub-goal solutions (environment, normalised
goal, actions, origin, use and failure counts); ``nodes.reused`` names the entry a reused node
replayed and where it was learned. Rows written before this revision have no ``reused``.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 13:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import adapt.store.models

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
UTC = adapt.store.models.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "library_entries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("environment", sa.String(length=128), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("goal_key", sa.Text(), nullable=False),
        sa.Column("actions", JSONType, nullable=False),
        sa.Column("origin", JSONType, nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("failure_streak", sa.Integer(), nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("last_used_at", UTC, nullable=True),
        sa.Column("dropped_at", UTC, nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_library_entries_lookup", "library_entries",
                    ["tenant", "environment", "goal_key"])
    op.create_index("ix_library_entries_tenant_id", "library_entries", ["tenant", "id"])
    op.add_column("nodes", sa.Column("reused", JSONType, nullable=True))


def downgrade() -> None:
    op.drop_column("nodes", "reused")
    op.drop_index("ix_library_entries_tenant_id", table_name="library_entries")
    op.drop_index("ix_library_entries_lookup", table_name="library_entries")
    op.drop_table("library_entries")
