"""Values a row holds already are stored once; tasks.tenant's own index goes

- ``steps.text`` (now nullable) is NULL where it equals the step's ``raw``;
- ``llm_calls.request_model`` is NULL where it equals the call's ``model``, and ``''`` where the
  call recorded none (rows written before 0012, NULL until now);
- ``nodes.plan`` whose ``raw`` is the completion of one of its node's calls names the call
  (``"raw_call": id``, the last such call) instead of holding it;
- ``llm_calls.monitor`` is ``[]`` where it is the record of a check that found nothing
  (``{"validations": 1, "violations": 0, "corrections": 0}``, integers);
- ``ix_tasks_tenant`` is dropped: every query by tenant uses ``ix_tasks_tenant_created`` (or
  another index that starts with the tenant).

Readers read them whole through ``adapt.store.elided``. The downgrade writes every value whole
again (NULL for a call that recorded no request model), as the code before this revision reads
them, and creates the index again.

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

#: the monitor's record of a check that found nothing, as this revision stores it whole
_CLEAN = '{"validations": 1, "violations": 0, "corrections": 0}'
#: a stored record that is exactly that: an object of those three keys, each that integer
_IS_CLEAN = {
    "postgresql": (
        "jsonb_typeof(monitor) = 'object' AND (SELECT count(*) FROM jsonb_object_keys(monitor)) = 3"
        " AND jsonb_typeof(monitor -> 'validations') = 'number' AND monitor ->> 'validations' = '1'"
        " AND jsonb_typeof(monitor -> 'violations') = 'number' AND monitor ->> 'violations' = '0'"
        " AND jsonb_typeof(monitor -> 'corrections') = 'number'"
        " AND monitor ->> 'corrections' = '0'"),
    "sqlite": (
        "json_valid(monitor) AND json_type(monitor) = 'object'"
        " AND (SELECT count(*) FROM json_each(llm_calls.monitor)) = 3"
        " AND json_type(monitor, '$.validations') = 'integer'"
        " AND json_extract(monitor, '$.validations') = 1"
        " AND json_type(monitor, '$.violations') = 'integer'"
        " AND json_extract(monitor, '$.violations') = 0"
        " AND json_type(monitor, '$.corrections') = 'integer'"
        " AND json_extract(monitor, '$.corrections') = 0"),
}
_IS_STORED_CLEAN = {"postgresql": "monitor = '[]'::jsonb",
                    "sqlite": "json_valid(monitor) AND json_type(monitor) = 'array' "
                              "AND json_array_length(monitor) = 0"}


#: the last call of the node whose completion is the plan's raw
_RAW_CALL = {
    "postgresql": ("(SELECT max(c.id) FROM llm_calls c WHERE c.task_id = nodes.task_id "
                   "AND c.node_id = nodes.id AND c.completion = nodes.plan ->> 'raw')"),
    "sqlite": ("(SELECT max(c.id) FROM llm_calls c WHERE c.task_id = nodes.task_id "
               "AND c.node_id = nodes.id AND c.completion = json_extract(nodes.plan, '$.raw'))"),
}
_NAME_RAW_CALL = {
    "postgresql": ("UPDATE nodes SET plan = (plan - 'raw') || jsonb_build_object('raw_call', "
                   "{call}) WHERE plan IS NOT NULL AND jsonb_typeof(plan) = 'object' "
                   "AND NOT plan ? 'raw_call' AND jsonb_typeof(plan -> 'raw') = 'string' "
                   "AND {call} IS NOT NULL"),
    "sqlite": ("UPDATE nodes SET plan = json_set(json_remove(plan, '$.raw'), '$.raw_call', "
               "{call}) WHERE plan IS NOT NULL AND json_valid(plan) "
               "AND json_type(plan) = 'object' AND json_type(plan, '$.raw_call') IS NULL "
               "AND json_type(plan, '$.raw') = 'text' AND {call} IS NOT NULL"),
}
#: a stored plan that names its call, whole again (``raw`` first, as the engine writes it)
_WHOLE_PLAN = {
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


def _dialect() -> str:
    return op.get_bind().dialect.name


def upgrade() -> None:
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.alter_column("text", existing_type=sa.Text(), nullable=True)
    op.execute("UPDATE steps SET text = NULL WHERE text = raw")
    # one statement, so that each row's old value decides: none recorded -> '', equal -> NULL
    op.execute("UPDATE llm_calls SET request_model = CASE WHEN request_model IS NULL THEN '' "
               "ELSE NULL END WHERE request_model IS NULL OR request_model = model")
    empty = "'[]'::jsonb" if _dialect() == "postgresql" else "'[]'"
    op.execute(f"UPDATE llm_calls SET monitor = {empty} "
               f"WHERE monitor IS NOT NULL AND {_IS_CLEAN[_dialect()]}")
    op.execute(_NAME_RAW_CALL[_dialect()].format(call=_RAW_CALL[_dialect()]))
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_tasks_tenant")


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index("ix_tasks_tenant", ["tenant"], unique=False)
    op.execute(_WHOLE_PLAN[_dialect()])
    clean = f"'{_CLEAN}'::jsonb" if _dialect() == "postgresql" else f"'{_CLEAN}'"
    op.execute(f"UPDATE llm_calls SET monitor = {clean} "
               f"WHERE monitor IS NOT NULL AND {_IS_STORED_CLEAN[_dialect()]}")
    op.execute("UPDATE llm_calls SET request_model = CASE WHEN request_model IS NULL "
               "THEN model ELSE NULL END WHERE request_model IS NULL OR request_model = ''")
    op.execute("UPDATE steps SET text = raw WHERE text IS NULL")
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.alter_column("text", existing_type=sa.Text(), nullable=False)
