"""nodes.claim, nodes.verdict, nodes.evidence: the executor's claim and the environment's
verdict on a node's goal (verification, issue 17)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 21:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("nodes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claim", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("verdict", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("evidence", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("nodes", schema=None) as batch_op:
        batch_op.drop_column("evidence")
        batch_op.drop_column("verdict")
        batch_op.drop_column("claim")
