"""growth: indexes for the task list's filters, and running totals for ``/metrics``

The list filters (``?environment=``, ``?strategy=``, ``?status=``) get an index each,
``(tenant, <filter>, created_at, id)``, so a filter that matches few tasks is an index range
and the cursor's row comparison ``(created_at, id) < (c, i)`` an index condition (issue 36).

``/metrics`` stops aggregating every row at each scrape: ``tasks.metrics_folded`` marks the
tasks whose figures are in ``metrics_rollup`` (one JSON document), and a partial index finds
the others, the few a scrape still aggregates row by row (``adapt.store.metrics``). Existing
tasks start unfolded; the first scrapes fold them, a batch at a time.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 13:30:00
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FILTERS = ("environment", "strategy", "status")


def upgrade() -> None:
    # ALTER TABLE ... ADD COLUMN in place (no batch copy of ``tasks``: dropping the old table
    # would cascade to every row that refers to it)
    op.add_column("tasks", sa.Column("metrics_folded", sa.Boolean(), nullable=False,
                                     server_default=sa.false()))
    if op.get_bind().dialect.name == "postgresql":
        # built while the previous release's workers keep writing (expand/contract)
        with op.get_context().autocommit_block():
            for column in _FILTERS:
                name = f"ix_tasks_tenant_{column}"
                op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")  # left by a failure
                op.execute(f"CREATE INDEX CONCURRENTLY {name} ON tasks "
                           f"(tenant, {column}, created_at, id)")
            op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_tasks_metrics_live")
            op.execute("CREATE INDEX CONCURRENTLY ix_tasks_metrics_live ON tasks (status) "
                       "WHERE NOT metrics_folded")
    else:
        for column in _FILTERS:
            op.create_index(f"ix_tasks_tenant_{column}", "tasks",
                            ["tenant", column, "created_at", "id"])
        op.create_index("ix_tasks_metrics_live", "tasks", ["status"],
                        sqlite_where=sa.text("metrics_folded = 0"))
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    rollup = op.create_table(
        "metrics_rollup",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("data", json_type, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    # the row every scrape locks exists from the start (no insert race between API replicas)
    op.bulk_insert(rollup, [{"name": "metrics", "data": {},
                             "updated_at": datetime.now(UTC)}])


def downgrade() -> None:
    op.drop_table("metrics_rollup")
    op.drop_index("ix_tasks_metrics_live", table_name="tasks")
    for column in _FILTERS:
        op.drop_index(f"ix_tasks_tenant_{column}", table_name="tasks")
    op.drop_column("tasks", "metrics_folded")
