"""``adapt db``: the database schema (Alembic migrations)."""

from __future__ import annotations

import typer

from adapt.cli.support import err, fail, safe_url, setup_logging
from adapt.errors import UserError

app = typer.Typer(help="Database schema (Alembic migrations).", no_args_is_help=True)


@app.command("upgrade")
def db_upgrade() -> None:
    """Apply pending migrations to ADAPT_DATABASE_URL (default: the embedded SQLite file),
    and list them, oldest first."""
    from adapt.settings import get_settings
    from adapt.store.migrate import upgrade

    setup_logging(False)
    settings = get_settings()
    try:
        applied = upgrade(settings.database_url)
    except UserError as exc:
        fail(str(exc))
    except Exception as exc:  # unreachable database, bad credentials, ...
        fail(f"could not migrate {safe_url(settings.database_url)}: {exc}")
    err.print(f"database {safe_url(settings.database_url)}: "
              + (f"applied {', '.join(applied)}" if applied else "already up to date"))


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
