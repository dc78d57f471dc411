"""``adapt tasks``: what an operator does with stored tasks: delete them (``purge``), and move
them between deployments (``export``, ``import``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from adapt.cli.support import err, fail, with_session

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


@app.command("export")
def tasks_export(
    task_id: Annotated[str, typer.Argument(help="The task (any tenant's).")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the archive there (default: standard output).")] = None,
) -> None:
    """Write a finished task as one JSON document (an archive: the task, its tree, steps,
    calls with their prompts, events), for `adapt tasks import` or POST /tasks/import."""
    import orjson

    from adapt.service.archive import export_task
    from adapt.store.models import Task

    async def read(session: AsyncSession) -> tuple[str | None, dict[str, Any] | None]:
        task = await session.get(Task, task_id) if len(task_id) <= 32 else None
        if task is None:
            return None, None
        if not task.finished:
            return task.status, None
        return task.status, await export_task(session, task)

    try:
        status, document = asyncio.run(with_session(read))
    except Exception as exc:
        fail(f"could not read the task (is the database migrated? `adapt db upgrade`): {exc}")
    if status is None:
        fail(f"no task {task_id!r}", code=1)
    if document is None:
        fail(f"task {task_id} is {status}: only a finished task can be exported; cancel it "
             "first", code=1)
    data = orjson.dumps(document)
    if output is None:
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.flush()
    else:
        output.write_bytes(data)
        err.print(f"wrote task {task_id} ({len(data)} bytes) to {escape(str(output))}")


@app.command("import")
def tasks_import(
    archive: Annotated[Path, typer.Argument(help="An archive (`adapt tasks export`).",
                                            exists=True, dir_okay=False)],
    tenant: Annotated[str, typer.Option(help="The tenant the task is stored for.")],
) -> None:
    """Load an archive as a new task of TENANT (the same checks as POST /tasks/import,
    including the size limit ADAPT_MAX_BODY_BYTES); prints the new task's id."""
    import orjson

    from adapt.service.archive import import_task
    from adapt.service.errors import InvalidField
    from adapt.settings import get_settings
    from adapt.store.models import Task

    limit = get_settings().max_body_bytes
    size = archive.stat().st_size
    if size > limit:
        fail(f"{archive} is {size} bytes, more than ADAPT_MAX_BODY_BYTES ({limit}); raise that "
             "setting to import it", code=1)
    try:
        document = orjson.loads(archive.read_bytes())
    except orjson.JSONDecodeError as exc:
        fail(f"{archive} is not JSON: {exc}", code=1)
    async def load(sessions: async_sessionmaker[AsyncSession]) -> Task:
        async with sessions() as session:
            return await import_task(session, document, tenant)

    try:
        task = asyncio.run(with_sessions(load))
    except InvalidField as exc:
        fail(f"{archive}: {exc.field}: {exc.message}", code=1)
    except Exception as exc:
        fail(f"could not import the task (is the database migrated? `adapt db upgrade`): {exc}")
    err.print(f"imported task {escape(str(document['task'].get('id')))} as task "
              f"[bold]{task.id}[/] of tenant {escape(tenant)}")
    sys.stdout.write(f"{task.id}\n")
