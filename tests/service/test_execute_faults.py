"""Database failures in the middle of a task never end it: the worker waits for the database and
resumes the task by replay in a new attempt, and no user-visible error shows SQL. Real
PostgreSQL; the failures are real (backends terminated by the server) or raised by the driver
layer at a chosen statement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg2
import pytest
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError, ProgrammingError

from adapt.engine import RunConfig
from adapt.service.execute import ServiceContext, execute_task
from adapt.service.faults import is_database_error, public_error
from adapt.sim import from_spec
from tests.service.helpers import events, insert_task, persisted_tree, task_row
from tests.service.test_execute import SIM, Counting, as_persisted, make_ctx, reference_tree
from tests.support.workers import llm_call_count


def _terminate_all(url: str) -> None:
    """pg_terminate_backend on every other connection to ``url``'s database."""
    admin = psycopg2.connect(url)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    finally:
        admin.close()


def on_statement(ctx: ServiceContext, match: str, nth: int,
                 action: Callable[[], None]) -> list[int]:
    """Run ``action`` just before the ``nth`` statement containing ``match`` executes."""
    seen = [0]

    def hook(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if match in statement:
            seen[0] += 1
            if seen[0] == nth:
                action()

    event.listen(ctx.engine.sync_engine, "before_cursor_execute", hook)
    return seen


async def check_resumed(ctx: ServiceContext, task_id: str, model: Counting) -> None:
    task = await task_row(ctx.sessions, task_id)
    assert task.status == "succeeded", task.error
    assert task.attempt >= 2 and task.lease_owner is None
    expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
    assert await persisted_tree(ctx.sessions, task_id) == expected
    evs = await events(ctx.sessions, task_id)
    assert [e.seq for e in evs] == list(range(1, task.last_seq + 1))
    assert [e.ordinal for e in evs] == list(range(1, len(evs) + 1))
    assert await llm_call_count(ctx.sessions, task_id) == 15
    # calls recorded before the failure were replayed, not paid again: at most the one whose
    # record the failure interrupted is sent twice
    assert 15 <= model.calls <= 16


@pytest.mark.parametrize("statement", ["INSERT INTO llm_calls", "INSERT INTO events",
                                       "UPDATE tasks SET last_seq"])
async def test_backends_terminated_mid_write_resume_the_task_here(
    pg_url: str, statement: str
) -> None:
    model = Counting(from_spec(SIM))
    ctx = make_ctx(pg_url, "w1", model)
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        seen = on_statement(ctx, statement, 5, lambda: _terminate_all(pg_url))
        assert await execute_task(ctx, task_id) == "succeeded"
        assert seen[0] > 5
        await check_resumed(ctx, task_id, model)
    finally:
        await ctx.aclose()


@pytest.mark.parametrize("error", [
    ProgrammingError("INSERT INTO llm_calls (prompt) VALUES ($1)", ("secret prompt",),
                     Exception("cannot insert")),
    IntegrityError("UPDATE tasks SET x=$1", ("secret",), Exception("conflict")),
    ConnectionResetError(104, "Connection reset by peer"),
])
async def test_any_database_side_failure_resumes_and_never_shows_sql(
    pg_url: str, error: Exception
) -> None:
    """Not only OperationalError/InterfaceError: every failure raised by the database layer
    (here, at the 4th event insert) leaves the task to be resumed; nothing is written off."""
    model = Counting(from_spec(SIM))
    ctx = make_ctx(pg_url, "w1", model)
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})

        def fail() -> None:
            raise error

        on_statement(ctx, "INSERT INTO events", 4, fail)
        assert await execute_task(ctx, task_id) == "succeeded"
        await check_resumed(ctx, task_id, model)
        for e in await events(ctx.sessions, task_id):
            assert "INSERT" not in str(e.data) and "secret" not in str(e.data)
    finally:
        await ctx.aclose()


def test_database_errors_are_recognised_and_never_shown() -> None:
    import asyncpg

    sa_error = ProgrammingError("SELECT secret FROM t WHERE p = $1", ("prompt text",),
                                Exception("boom"))
    assert is_database_error(sa_error)
    assert is_database_error(asyncpg.exceptions.ConnectionDoesNotExistError("closed"))
    assert is_database_error(asyncpg.exceptions.InterfaceError("connection is closed"))
    try:
        try:
            raise asyncpg.exceptions.ConnectionDoesNotExistError("closed")
        except Exception as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as wrapped:
        assert is_database_error(wrapped)
    assert not is_database_error(ConnectionResetError("not from a driver"))
    assert not is_database_error(ValueError("bad"))
    text = public_error(sa_error)
    assert "SELECT" not in text and "prompt text" not in text
    assert public_error(ValueError("x" * 2000)).endswith("...")
