"""Values a row holds already are stored once; tasks.tenant's own index goes

From this revision the writers store (``adapt.store.elided``):

- ``steps.text`` (now nullable) NULL where it equals the step's ``raw``;
- ``llm_calls.request_model`` ``''`` where it equals the call's ``model`` (NULL still means
  the call recorded none: rows written before 0012);
- ``llm_calls.monitor`` ``[]`` where it is the record of a check that found nothing
  (``{"validations": 1, "violations": 0, "corrections": 0}``, integers);
- ``nodes.plan`` whose ``raw`` is the completion of its node's latest call without it,
  naming the call instead (``"raw_call": id``);

and the readers read rows of both forms. The upgrade is an expansion (expand/contract,
docs/development.md): it makes ``steps.text`` nullable and drops ``ix_tasks_tenant`` (every
query by tenant uses ``ix_tasks_tenant_created`` or another index that starts with the
tenant), and rewrites no row, so the previous release goes on reading every row written before
it. The downgrade writes every value whole again, as the code before this revision reads them,
and builds the index again.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: the monitor's record of a check that found nothing, whole
_CLEAN = '{"validations": 1, "violations": 0, "corrections": 0}'
_MONITOR_WHOLE = {
    "postgresql": f"UPDATE llm_calls SET monitor = '{_CLEAN}'::jsonb WHERE monitor = '[]'::jsonb",
    "sqlite": (f"UPDATE llm_calls SET monitor = '{_CLEAN}' WHERE monitor IS NOT NULL "
               "AND json_valid(monitor) AND json_type(monitor) = 'array' "
               "AND json_array_length(monitor) = 0"),
}
#: a stored plan that names its call, whole again
_PLAN_WHOLE = {
    "postgresql": ("UPDATE nodes SET plan = jsonb_build_object('raw', (SELECT c.completion "
                   "FROM llm_calls c WHERE c.task_id = nodes.task_id "
                   "AND c.id = (nodes.plan ->> 'raw_call')::int)) || (plan - 'raw_call') "
                   "WHERE plan IS NOT NULL AND jsonb_typeof(plan) = 'object' "
                   "AND plan ? 'raw_call' AND NOT plan ? 'raw'"),
    # (SQLite: ``raw`` last; a plan's fields are read by name)
    "sqlite": ("UPDATE nodes SET plan = json_set(json_remove(plan, '$.raw_call'), '$.raw', "
               "(SELECT c.completion FROM llm_calls c WHERE c.task_id = nodes.task_id "
               "AND c.id = json_extract(nodes.plan, '$.raw_call'))) WHERE plan IS NOT NULL "
               "AND json_valid(plan) AND json_type(plan) = 'object' "
               "AND json_type(plan, '$.raw_call') IS NOT NULL "
               "AND json_type(plan, '$.raw') IS NULL"),
}


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.alter_column("text", existing_type=sa.Text(), nullable=True)
    if _postgresql():
        with op.get_context().autocommit_block():  # while the previous release writes
            op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_tasks_tenant")
    else:
        op.drop_index("ix_tasks_tenant", table_name="tasks")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.execute(_PLAN_WHOLE[dialect])
    op.execute(_MONITOR_WHOLE[dialect])
    op.execute("UPDATE llm_calls SET request_model = model WHERE request_model = ''")
    op.execute("UPDATE steps SET text = raw WHERE text IS NULL")
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.alter_column("text", existing_type=sa.Text(), nullable=False)
    if _postgresql():
        with op.get_context().autocommit_block():
            op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_tasks_tenant")  # left by a failure
            op.execute("CREATE INDEX CONCURRENTLY ix_tasks_tenant ON tasks (tenant)")
    else:
        op.create_index("ix_tasks_tenant", "tasks", ["tenant"])
