"""``adapt tasks export|import|purge``: an operator moves a task to another database and deletes
a tenant's tasks from the command line."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from adapt.cli import app
from adapt.service.execute import execute_task
from adapt.store.db import create_engine, session_factory
from tests.service.helpers import insert_task, persisted_tree
from tests.service.test_execute import make_ctx


def adapt(db: str, *args: str, **env: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(app, list(args), env={"ADAPT_DATABASE_URL": db, **env})
    return out.exit_code, out.stdout, out.stderr


async def run_one(db: str, tenant: str) -> tuple[str, dict[str, object]]:
    ctx = make_ctx(db, "w1")
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 3}, tenant=tenant)
        await execute_task(ctx, task_id)
        return task_id, await persisted_tree(ctx.sessions, task_id)
    finally:
        await ctx.aclose()


async def tree_of(db: str, task_id: str) -> dict[str, object]:
    engine = create_engine(db)
    try:
        return await persisted_tree(session_factory(engine), task_id)
    finally:
        await engine.dispose()


def test_export_import_and_purge(sqlite_url: str, pg_url: str, tmp_path: Path) -> None:
    task_id, tree = asyncio.run(run_one(sqlite_url, "acme"))
    archive = tmp_path / "task.json"
    code, _, err = adapt(sqlite_url, "tasks", "export", task_id, "-o", str(archive))
    assert code == 0 and archive.stat().st_size > 0, err

    code, out, err = adapt(pg_url, "tasks", "import", str(archive), "--tenant", "beta")
    assert code == 0, err
    new_id = out.strip()
    assert new_id != task_id and asyncio.run(tree_of(pg_url, new_id)) == tree

    code, _, err = adapt(pg_url, "tasks", "import", str(archive), "--tenant", "beta",
                         ADAPT_MAX_BODY_BYTES="1024")
    assert code == 1 and "ADAPT_MAX_BODY_BYTES" in err

    assert adapt(sqlite_url, "tasks", "purge")[0] == 2  # neither a tenant nor --all-tenants
    code, _, err = adapt(sqlite_url, "tasks", "purge", "--tenant", "acme")
    assert code == 0 and "deleted 1 finished task(s) of tenant acme" in err, err
    code, _, err = adapt(sqlite_url, "tasks", "export", task_id)
    assert code == 1 and "no task" in err
    code, _, err = adapt(pg_url, "tasks", "purge", "--all-tenants", "--before", "2000-01-01")
    assert code == 0 and "deleted 0 finished task(s)" in err
