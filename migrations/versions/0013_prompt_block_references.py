"""Prompt blocks can be deleted: foreign keys from a call to its last block and from a block to
its parent, and the indexes that find who references a block

Deleting a task deletes the prompt blocks no other call's chain holds (``adapt.store.prompts``).
Blocks are shared between tasks, and a worker writing a call may be about to point at a block
that a deletion is removing; the foreign keys make the database refuse one of the two (the
writer then sends the block again: ``adapt.store.sink``). Before the keys are added, what they
would refuse is repaired: a block whose chain does not reach a first block (its parent was
lost, e.g. by a PostgreSQL crash with ``synchronous_commit=off``) spells no prompt and goes, and
a call that names a missing block keeps no prompt (it had none that could be read).

Expand only: the code of the release before runs on this schema (it writes a batch's blocks
before, or in the same statement as, the calls that name them). On PostgreSQL the indexes are
built ``CONCURRENTLY`` and the keys added ``NOT VALID`` then validated, so running workers keep
writing meanwhile; on SQLite the two tables are rebuilt.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CALL_FK, PARENT_FK = "fk_llm_calls_prompt_ref", "fk_prompt_blocks_parent"
CALL_IX, PARENT_IX = "ix_llm_calls_prompt_ref", "ix_prompt_blocks_parent"

#: the blocks whose chain reaches a first block (parent NULL)
_WHOLE = ("WITH RECURSIVE whole(hash, depth) AS ("
          " SELECT hash, 0 FROM {table} WHERE parent IS NULL"
          " UNION ALL SELECT b.hash, w.depth + 1 FROM {table} b JOIN whole w ON b.parent = w.hash)")


def _forget_missing_refs(conn: sa.Connection) -> None:
    conn.execute(sa.text(
        "UPDATE llm_calls SET prompt_ref = NULL WHERE prompt_ref IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM prompt_blocks b WHERE b.hash = llm_calls.prompt_ref)"))


def _upgrade_postgresql(conn: sa.Connection) -> None:
    with op.get_context().autocommit_block():  # indexes built while workers keep writing
        for name, table, column in ((PARENT_IX, "prompt_blocks", "parent"),
                                    (CALL_IX, "llm_calls", "prompt_ref")):
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")  # left invalid by a failure
            op.execute(f"CREATE INDEX CONCURRENTLY {name} ON {table} ({column})")
    conn.execute(sa.text(
        _WHOLE.format(table="prompt_blocks")
        + ", broken AS (SELECT hash FROM prompt_blocks EXCEPT SELECT hash FROM whole)"
        " UPDATE llm_calls SET prompt_ref = NULL WHERE prompt_ref IN (SELECT hash FROM broken)"))
    conn.execute(sa.text(
        _WHOLE.format(table="prompt_blocks")
        + " DELETE FROM prompt_blocks WHERE hash NOT IN (SELECT hash FROM whole)"))
    _forget_missing_refs(conn)
    # NOT VALID: added at once; VALIDATE reads the rows without blocking writes
    op.execute(f"ALTER TABLE prompt_blocks ADD CONSTRAINT {PARENT_FK} FOREIGN KEY (parent) "
               "REFERENCES prompt_blocks (hash) NOT VALID")
    op.execute(f"ALTER TABLE llm_calls ADD CONSTRAINT {CALL_FK} FOREIGN KEY (prompt_ref) "
               "REFERENCES prompt_blocks (hash) NOT VALID")
    op.execute(f"ALTER TABLE prompt_blocks VALIDATE CONSTRAINT {PARENT_FK}")
    op.execute(f"ALTER TABLE llm_calls VALIDATE CONSTRAINT {CALL_FK}")


def _upgrade_sqlite(conn: sa.Connection) -> None:
    # SQLite adds a foreign key only with the table: a new prompt_blocks, filled parents first
    # (the key is checked row by row), with the blocks whose chain is whole
    op.execute("ALTER TABLE prompt_blocks RENAME TO _prompt_blocks_0013")
    op.create_table(
        "prompt_blocks",
        sa.Column("hash", sa.String(length=32), nullable=False),
        sa.Column("parent", sa.String(length=32), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["parent"], ["prompt_blocks.hash"], name=PARENT_FK),
        sa.PrimaryKeyConstraint("hash"),
    )
    conn.execute(sa.text(
        _WHOLE.format(table="_prompt_blocks_0013")
        + " INSERT INTO prompt_blocks (hash, parent, text) SELECT o.hash, o.parent, o.text"
        " FROM _prompt_blocks_0013 o JOIN whole w ON w.hash = o.hash ORDER BY w.depth"))
    op.drop_table("_prompt_blocks_0013")
    op.create_index(PARENT_IX, "prompt_blocks", ["parent"])
    _forget_missing_refs(conn)
    with op.batch_alter_table("llm_calls", recreate="always") as batch_op:
        batch_op.create_foreign_key(CALL_FK, "prompt_blocks", ["prompt_ref"], ["hash"])
        batch_op.create_index(CALL_IX, ["prompt_ref"])


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        _upgrade_postgresql(conn)
    else:
        _upgrade_sqlite(conn)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        op.drop_constraint(CALL_FK, "llm_calls", type_="foreignkey")
        op.drop_constraint(PARENT_FK, "prompt_blocks", type_="foreignkey")
        op.drop_index(CALL_IX, table_name="llm_calls")
        op.drop_index(PARENT_IX, table_name="prompt_blocks")
        return
    with op.batch_alter_table("llm_calls", recreate="always") as batch_op:
        batch_op.drop_index(CALL_IX)
        batch_op.drop_constraint(CALL_FK, type_="foreignkey")
    op.drop_index(PARENT_IX, table_name="prompt_blocks")
    with op.batch_alter_table("prompt_blocks", recreate="always") as batch_op:
        batch_op.drop_constraint(PARENT_FK, type_="foreignkey")
