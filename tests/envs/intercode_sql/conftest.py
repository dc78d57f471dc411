"""Fixtures of the InterCode-SQL tests (defined in tests/sqldb.py, shared with the SQL bench)."""

from tests.sqldb import data_dir, env, server  # noqa: F401
