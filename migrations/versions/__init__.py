"""The revisions (Alembic skips this file)."""
