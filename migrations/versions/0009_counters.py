"""counters: fleet-wide counters /metrics reports (trace spans dropped, issue 21)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    counters = op.create_table(
        "counters",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    # the row workers add to exists from the start (no insert race between workers)
    op.bulk_insert(counters, [{"name": "otel_spans_dropped", "value": 0}])


def downgrade() -> None:
    op.drop_table("counters")
