"""Which failures are the database's, and what a user may see of a failure.

A database failure (a dropped connection, a restart, a failover, a full disk, a statement the
server cancelled) says nothing about the task: the task is resumed once the database answers
again. The drivers report such failures in many shapes: SQLAlchemy's ``DBAPIError`` family
(whatever the DBAPI class), asyncpg's own exceptions raised outside SQLAlchemy's wrapping (while
a pooled connection is reset or closed), sqlite3/aiosqlite errors, and plain ``OSError`` or
``TimeoutError`` from a socket inside the driver. :func:`is_database_error` recognises all of
them, following ``__cause__``/``__context__`` chains.

Error messages of database exceptions contain the SQL statement and its bound parameters
(prompts included); :func:`public_error` never lets them through.
"""

from __future__ import annotations

import traceback
from types import TracebackType

from sqlalchemy.exc import SQLAlchemyError

#: modules whose exceptions are database failures
_DRIVER_MODULES = ("asyncpg", "aiosqlite", "sqlite3", "psycopg2", "psycopg", "sqlalchemy")
#: path fragments of frames that belong to a database driver (for OSError and timeouts)
_DRIVER_PATHS = tuple(f"/{m}/" for m in _DRIVER_MODULES)
#: longest error message stored on a task
MAX_ERROR = 500


def _raised_in_driver(tb: TracebackType | None) -> bool:
    return any(p in frame.f_code.co_filename.replace("\\", "/")
               for frame, _ in traceback.walk_tb(tb) for p in _DRIVER_PATHS)


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in out) and len(out) < 20:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def is_database_error(exc: BaseException) -> bool:
    """True if ``exc`` (or an exception it was raised from) is a failure of the database or of
    the connection to it."""
    for e in _chain(exc):
        if isinstance(e, SQLAlchemyError):
            return True
        if type(e).__module__.split(".")[0] in _DRIVER_MODULES:
            return True
        if isinstance(e, OSError | TimeoutError | EOFError) and _raised_in_driver(
                e.__traceback__):
            return True
    return False


def public_error(exc: BaseException) -> str:
    """A task's ``error`` text for an unexpected failure: the exception's class, and its
    message unless it comes from the database (which would show SQL and parameters)."""
    if is_database_error(exc):
        return f"internal error: database failure ({type(exc).__name__})"
    message = str(exc)
    if len(message) > MAX_ERROR:
        message = message[:MAX_ERROR] + "..."
    return f"internal error: {type(exc).__name__}: {message}"
