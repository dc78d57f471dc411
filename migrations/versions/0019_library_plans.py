"""library_entries.kind and .logic: stored plans next to stored solutions (issue 31)

An entry of kind ``plan`` holds a decomposition that worked (its steps in ``actions``, its
execution order in ``logic``; ``reuse.plans``). Rows written before this revision are skills.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 16:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("library_entries", sa.Column("kind", sa.String(length=16), nullable=False,
                                               server_default="skill"))
    op.add_column("library_entries", sa.Column("logic", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("library_entries", "logic")
    op.drop_column("library_entries", "kind")
