"""Apply and check the Alembic migrations (the ``migrations`` package) programmatically."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
    """Apply pending migrations up to ``revision`` (blocking; call from a thread inside an
    event loop); returns the revisions applied, oldest first, and logs them in one line. A
    database at a revision this release does not know, or past ``revision``, is refused
    (:func:`check_upgrade`)."""
    ensure_sqlite_dir(url)
    before = list(check_upgrade(url, revision).pending)
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


@dataclass(frozen=True)
class SchemaState:
    """Where a database's schema stands against this release's migrations."""

    #: the database's revisions (empty: no adapt schema yet)
    current: tuple[str, ...]
    #: this release's newest revision
    head: str
    #: revisions to apply to reach ``head``, oldest first
    pending: tuple[str, ...]
    #: the database's revisions this release does not know (a newer release migrated it)
    unknown: tuple[str, ...]

    @property
    def ahead(self) -> bool:
        return bool(self.unknown)


def current_revisions(url: str) -> tuple[str, ...]:
    engine = create_sync_engine(_sync_url(url))
    try:
        with engine.connect() as conn, _quiet_alembic():
            return tuple(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()


def state(url: str) -> SchemaState:
    """The database's revision against this release's migrations (one connection)."""
    script = ScriptDirectory.from_config(alembic_config(url))
    current = current_revisions(url)
    known = {rev.revision for rev in script.walk_revisions()}
    unknown = tuple(r for r in current if r not in known)
    head = code_head()
    todo: list[str] = []
    if not unknown:
        for rev in script.iterate_revisions(head, "base"):
            if rev.revision in current:
                break
            todo.append(rev.revision)
    return SchemaState(current, head, tuple(reversed(todo)), unknown)


def pending(url: str) -> list[str]:
    """Revisions not applied yet, oldest first (empty when the database is up to date, or
    ahead of this release: see :func:`state`)."""
    return list(state(url).pending)


def check_serving(url: str) -> SchemaState:
    """Whether this release may run on the database without migrating it: not while
    migrations are pending (``UserError``); a database a newer release migrated is served,
    with a warning (schema changes are expand/contract: the release before a migration runs
    on the schema after it, so old and new processes run side by side during an upgrade)."""
    now = state(url)
    if now.pending:
        raise UserError(f"the database has {len(now.pending)} pending migration(s) "
                        f"({', '.join(now.pending)}); run `adapt db upgrade` first")
    if now.ahead:
        log.warning("the database is at revision %s, newer than this release's %s: running "
                    "as the previous release during an upgrade (upgrade this process next)",
                    ", ".join(now.unknown), now.head)
    return now


def check_upgrade(url: str, revision: str = "head") -> SchemaState:
    """The database's state, if upgrading it to ``revision`` moves only forward; else a
    ``UserError`` that says why not (adapt never downgrades a database on its own)."""
    now = state(url)
    if now.unknown:
        raise UserError(
            f"the database is at revision {', '.join(now.unknown)}, which this release of adapt "
            f"does not know (its newest is {now.head}): a newer release migrated it. Run that "
            "release or a newer one; to go back to this one, restore a backup taken before "
            "the upgrade (docs/operations.md#backups). Nothing was changed")
    script = ScriptDirectory.from_config(alembic_config(url))
    try:
        target = script.get_revision(revision if revision != "head" else now.head)
    except Exception:
        raise UserError(f"unknown revision {revision!r}: this release's migrations go up to "
                        f"{now.head}") from None
    if target is None:
        return now
    below = {rev.revision for rev in script.iterate_revisions(target.revision, "base")}
    ahead = [r for r in now.current if r not in below]
    if ahead:
        raise UserError(
            f"the database is at revision {', '.join(ahead)}, past {target.revision}: reaching "
            f"{target.revision} would be a downgrade, which `adapt db upgrade` never does. "
            "Nothing was changed")
    return now


@functools.cache
def code_head() -> str:
    """The newest revision the installed migrations hold (what this release's code expects)."""
    script = ScriptDirectory(str(migrations_dir()))
    head = script.get_current_head()
    if head is None:
        raise UserError("the adapt migrations hold no revision; reinstall adapt")
    return head
