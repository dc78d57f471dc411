"""llm_calls.messages and llm_calls.stop as JSON lists (were {"messages": [...]} / {"stop": [...]})

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 23:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("messages", "stop")


def _unwrap_sql(dialect: str, column: str) -> str:
    """Replace ``{"<column>": [...]}`` by the list (other values are left as they are)."""
    if dialect == "postgresql":  # JSONB
        return (f"UPDATE llm_calls SET {column} = {column} -> '{column}' "
                f"WHERE jsonb_typeof({column}) = 'object'")
    return (f"UPDATE llm_calls SET {column} = json_extract({column}, '$.{column}') "
            f"WHERE json_type({column}) = 'object'")


def _wrap_sql(dialect: str, column: str) -> str:
    """Replace a list by ``{"<column>": [...]}``."""
    if dialect == "postgresql":
        return (f"UPDATE llm_calls SET {column} = jsonb_build_object('{column}', {column}) "
                f"WHERE jsonb_typeof({column}) = 'array'")
    return (f"UPDATE llm_calls SET {column} = json_object('{column}', json({column})) "
            f"WHERE json_type({column}) = 'array'")


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for column in _COLUMNS:
        op.execute(_unwrap_sql(dialect, column))


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for column in _COLUMNS:
        op.execute(_wrap_sql(dialect, column))
