"""``adapt db``: the database schema (Alembic migrations): apply them (``upgrade``), and say
whether any are pending (``check``; ``status`` is its older, terser form)."""

from __future__ import annotations

from typing import Annotated

import typer

from adapt.cli.support import err, fail, safe_url, setup_logging
from adapt.errors import UserError

app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


@app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Option(
        help="Stop at this revision (default: the newest this release ships).")] = "head",
) -> None:
    """Apply pending migrations to ADAPT_DATABASE_URL (default: the embedded SQLite file),
    and list them, oldest first. Never downgrades: a database at a revision this release does not know (a newer release
    migrated it), or past --revision, is refused and left as it is."""
    from adapt.settings import get_settings
    from adapt.store.migrate import upgrade

    setup_logging(False)
    settings = get_settings()
    try:
        applied = upgrade(settings.database_url, revision)
    except UserError as exc:
        fail(str(exc))
    except Exception as exc:  # unreachable database, bad credentials, ...
        fail(f"could not migrate {safe_url(settings.database_url)}: {exc}")
    err.print(f"database {safe_url(settings.database_url)}: "
              + (f"applied {', '.join(applied)} (oldest first)" if applied
                 else "already up to date"))


@app.command("check")
def db_check() -> None:
    """Say whether the database needs `adapt db upgrade`: exit 0 when it is at this release's
    newest revision, 1 when migrations are pending or a newer release migrated it."""
    from adapt.settings import get_settings
    from adapt.store.migrate import state

    settings = get_settings()
    try:
        now = state(settings.database_url)
    except Exception as exc:
        fail(f"could not read {safe_url(settings.database_url)}: {exc}")
    at = ", ".join(now.current) or "none (an empty database)"
    err.print(f"database {safe_url(settings.database_url)}: revision {at}; this release's "
              f"newest: {now.head}")
    if now.ahead:
        err.print("newer than this release (a newer release migrated it): nothing to apply; "
                  "this release still runs on it during an upgrade, but `adapt db upgrade` "
                  "refuses it")
        raise typer.Exit(1)
    if now.pending:
        err.print(f"{len(now.pending)} migration(s) pending: {', '.join(now.pending)}; run "
                  "`adapt db upgrade`")
        raise typer.Exit(1)
    err.print("up to date")


@app.command("status")
def db_status() -> None:
    """Show pending migrations (exit 1 when some are pending)."""
    from adapt.settings import get_settings
    from adapt.store.migrate import pending

    settings = get_settings()
    try:
        todo = pending(settings.database_url)
    except Exception as exc:
        fail(f"could not read {safe_url(settings.database_url)}: {exc}")
    err.print("pending: " + (", ".join(todo) if todo else "none"))
    raise typer.Exit(1 if todo else 0)
