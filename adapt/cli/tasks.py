"""``adapt tasks``: what an operator does with stored tasks: delete them (``purge``), and move
them between deployments (``export``, ``import``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.markup import escape

from adapt.cli.support import err, fail

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

T = TypeVar("T")

app = typer.Typer(help="Stored tasks: delete them, move them to another deployment.",
                  no_args_is_help=True)


async def with_sessions(fn: Callable[[async_sessionmaker[AsyncSession]], Awaitable[T]]) -> T:
    """Run ``fn`` with a session factory on the configured database."""
    from adapt.settings import get_settings
    from adapt.store.db import create_engine, session_factory

    engine = create_engine(get_settings().database_url)
    try:
        return await fn(session_factory(engine))
    finally:
        await engine.dispose()


def _moment(option: str, value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(f"{option} {value!r}: not a date (YYYY-MM-DD or an ISO 8601 time)")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@app.command("purge")
def tasks_purge(
    tenant: Annotated[str | None, typer.Option(
        help="Only this tenant's tasks (required unless --all-tenants).")] = None,
    before: Annotated[str | None, typer.Option(
        help="Only tasks that finished before then (YYYY-MM-DD or ISO 8601; UTC unless it "
        "says otherwise).")] = None,
    all_tenants: Annotated[bool, typer.Option(
        "--all-tenants", help="Every tenant's tasks (with --before).")] = False,
) -> None:
    """Delete finished tasks with everything stored of them (nodes, steps, calls, prompts no
    other task uses, events, webhook deliveries), in small batches. Queued and running tasks
    are left: cancel them first."""
    from adapt.service.retention import active_count, purge

    if (tenant is None) == (not all_tenants):
        fail("name one tenant (--tenant T) or every tenant (--all-tenants)")
    if all_tenants and before is None:
        fail("--all-tenants deletes every finished task: give --before DATE as well")
    moment = _moment("--before", before) if before is not None else None

    async def run(sessions: async_sessionmaker[AsyncSession]) -> tuple[int, int, int]:
        done = await purge(sessions, tenant=tenant, before=moment)
        left = await active_count(sessions, tenant) if tenant is not None else 0
        return len(done.tasks), done.blocks, left

    try:
        tasks, blocks, active = asyncio.run(with_sessions(run))
    except Exception as exc:
        fail(f"could not delete the tasks (is the database migrated? `adapt db upgrade`): {exc}")
    who = f"tenant {escape(tenant)}" if tenant is not None else "every tenant"
    err.print(f"deleted {tasks} finished task(s) of {who} and {blocks} prompt block(s) no "
              "other task used")
    if active:
        err.print(f"[yellow]{active} queued or running task(s) left[/]: cancel them "
                  "(POST /tasks/{id}/cancel) and purge again once they have finished")
