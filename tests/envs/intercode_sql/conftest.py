"""Fixtures of the InterCode-SQL tests (defined in tests/support/sqldb.py, shared with the SQL bench)."""

from tests.support.sqldb import data_dir, env, server  # noqa: F401
