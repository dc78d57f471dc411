"""Fixtures of the bench tests: the SQL bench uses the InterCode-SQL ones."""

from tests.sqldb import data_dir, server  # noqa: F401
