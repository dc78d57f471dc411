"""approvals.decided_seq: the order of a task's decisions (approval.parallel_siblings)

A decision is numbered 1, 2, ... per task as it is stored, under the task row's lock, so the
numbers follow the order the decisions became visible; a run whose sibling nodes wait at the
same time hands the decisions to them in this order. Rows decided before this revision have
none (they go on in the order they were asked).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 16:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("approvals", sa.Column("decided_seq", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("decided_seq")
