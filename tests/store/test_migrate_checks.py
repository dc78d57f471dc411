"""``adapt db check`` says whether migrations are pending; ``adapt db upgrade`` moves only
forward: a database a newer release migrated, or one past the revision asked for, is refused
with a message that says what to do, and left as it is. A database ahead of this release is
still served (expand/contract: the release before a migration runs on the schema after it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from adapt.cli import app
from adapt.errors import UserError
from adapt.store.migrate import _sync_url, check_serving, code_head, current_revisions, pending


def adapt(db: str, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(app, list(args), env={"ADAPT_DATABASE_URL": db})
    return out.exit_code, " ".join(out.stderr.split())


def stamp(url: str, revision: str) -> None:
    engine = create_engine(_sync_url(url))
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    finally:
        engine.dispose()


def revisions_after(number: int) -> str:
    """The code's revisions after ``number`` up to its head, as ``adapt db`` lists them."""
    return ", ".join(f"{n:04d}" for n in range(number + 1, int(code_head()) + 1))


def test_check_then_upgrade_an_empty_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    code, said = adapt(url, "db", "check")
    assert code == 1 and "pending" in said and "adapt db upgrade" in said
    code, said = adapt(url, "db", "upgrade", "--revision", "0010")
    assert code == 0 and said.endswith("applied 0001, 0002, 0003, 0004, 0005, 0006, 0007, "
                                       "0008, 0009, 0010 (oldest first)"), said
    assert pending(url)[0] == "0011"
    code, said = adapt(url, "db", "upgrade")
    assert code == 0 and f"applied {revisions_after(10)} (oldest first)" in said, said
    code, said = adapt(url, "db", "check")
    assert code == 0 and said.endswith("up to date") and f"newest: {code_head()}" in said


def test_a_database_a_newer_release_migrated_is_refused_and_left_alone(
        database_url: str) -> None:
    stamp(database_url, "9999")
    code, said = adapt(database_url, "db", "upgrade")
    assert code == 2, said
    assert "revision 9999, which this release of adapt does not know" in said
    assert "restore a backup" in said and "Nothing was changed" in said
    assert current_revisions(database_url) == ("9999",)
    code, said = adapt(database_url, "db", "check")
    assert code == 1 and "newer than this release" in said
    assert check_serving(database_url).ahead  # served, with a warning


def test_a_revision_behind_the_database_is_a_downgrade_and_refused(sqlite_url: str) -> None:
    code, said = adapt(sqlite_url, "db", "upgrade", "--revision", "0010")
    assert code == 2 and "would be a downgrade" in said, said
    assert current_revisions(sqlite_url) == (code_head(),)
    code, said = adapt(sqlite_url, "db", "upgrade", "--revision", "nope")
    assert code == 2 and "unknown revision 'nope'" in said
    stamp(sqlite_url, "0012")
    with pytest.raises(UserError, match=r"pending migration\(s\) \(" + revisions_after(12)):
        check_serving(sqlite_url)
