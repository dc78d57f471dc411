"""llm_calls.request_model: the model a call asked for (``model`` is the one the response named)

Trace export reports both (``gen_ai.request.model``, ``gen_ai.response.model``). Rows written
before this revision have none; readers fall back to ``model``.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 16:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.add_column(sa.Column("request_model", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.drop_column("request_model")
