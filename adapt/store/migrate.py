"""Apply and check the Alembic migrations (the ``migrations`` package) programmatically."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.engine import make_url

from adapt.errors import UserError
from adapt.store.db import async_url, ensure_sqlite_dir

log = logging.getLogger(__name__)


def migrations_dir() -> Path:
    """The folder of the ``migrations`` package: installed with adapt (package data of the
    wheel), or the checkout's in an editable install."""
    try:
        found: Path | None = Path(str(resources.files("migrations")))
    except ModuleNotFoundError:
        found = None
    # an editable install made before ``migrations`` became a package does not map it
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    for path in (found, checkout):
        if path is not None and (path / "env.py").is_file() and (path / "versions").is_dir():
            return path
    raise UserError(f"the adapt migrations are not installed (looked in {found or checkout}); "
                    "reinstall adapt (pip install .)")


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", async_url(url).replace("%", "%%"))
    cfg.attributes["configure_logging"] = False
    return cfg


@contextmanager
def _quiet_alembic() -> Iterator[None]:
    """Alembic says INFO for each migration and for each connection it inspects: a first
    start would print a dozen lines; adapt says what was done in one (:func:`summary`)."""
    logger = logging.getLogger("alembic")
    level = logger.level
    logger.setLevel(max(logging.WARNING, level))
    try:
        yield
    finally:
        logger.setLevel(level)


def upgrade(url: str, revision: str = "head") -> list[str]:
    """Apply pending migrations (blocking; call from a thread inside an event loop); returns
    the revisions applied, oldest first, and logs them in one line."""
    ensure_sqlite_dir(url)
    before = pending(url)
    if not before:
        return []
    with _quiet_alembic():
        command.upgrade(alembic_config(url), revision)
    after = set(pending(url)) if revision != "head" else set()
    applied = [rev for rev in before if rev not in after]
    if applied:
        log.info("database %s: %s", make_url(url).render_as_string(hide_password=True),
                 summary(applied))
    return applied


def summary(applied: list[str]) -> str:
    """``applied 12 migrations (0001 to 0012)``: one line for a list of revisions."""
    if len(applied) == 1:
        return f"applied migration {applied[0]}"
    return f"applied {len(applied)} migrations ({applied[0]} to {applied[-1]})"


def _sync_url(url: str) -> str:
    parsed = make_url(async_url(url))
    driver = "sqlite" if parsed.get_backend_name() == "sqlite" else "postgresql+psycopg2"
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def pending(url: str) -> list[str]:
    """Revisions not applied yet, oldest first (empty when the database is up to date)."""
    script = ScriptDirectory.from_config(alembic_config(url))
    engine = create_sync_engine(_sync_url(url))
    try:
        with engine.connect() as conn, _quiet_alembic():
            current = set(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()
    heads = script.get_revisions("heads")
    todo: list[str] = []
    for head in heads:
        for rev in script.iterate_revisions(head.revision, "base"):
            if rev.revision in current:
                break
            todo.append(rev.revision)
    return todo[::-1]
