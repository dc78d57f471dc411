"""tasks.worker: the worker that runs the task's attempt, or ran its last one; nodes.reason:
why a node was not decomposed, or not run

``tasks.worker`` is set when a worker claims the task (the same id as its lease and its row
in ``workers``) and kept once the task ends, so the API says which worker ran it.
``nodes.reason`` is the engine's ``Node.reason`` (d_max reached, skipped because a sibling
decided the group, not run for a budget or a cancel). Rows written before this revision have
neither.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 11:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("tasks", sa.Column("worker", sa.String(length=255), nullable=True))
    op.add_column("nodes", sa.Column("reason", sa.Text(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN in place (SQLite >= 3.35 too): a batch operation would copy
    # the table, and dropping the old ``tasks`` would cascade to every row that refers to it
    op.drop_column("nodes", "reason")
    op.drop_column("tasks", "worker")
