"""InterCode-SQL test support: where the data is, how to reach MariaDB, and the fixtures.

The data is read from ``../shared/data/intercode-sql`` next to the repository (never copied into
it); tests that need it, or the server, are skipped with the reason when either is absent.
Conftests re-export the fixtures (``data_dir``, ``server``, ``env``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapt.envs.intercode_sql import InterCodeSQL
from adapt.errors import UserError

#: the data next to the repository (``../shared``), or where ``ADAPT_TEST_SQL_DATA`` says (a git
#: worktree elsewhere), as the Bash tests' ``ADAPT_TEST_BASH_DATA``
DATA_DIR = Path(os.environ.get("ADAPT_TEST_SQL_DATA") or (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "intercode-sql"
)).resolve()

HOST = "127.0.0.1"
PORT = 3306
ADMIN_USER = "root"
ADMIN_PASSWORD = ""
# One agent user per test session, so two sessions against one server never drop each other's.
AGENT_USER = f"adapt_test_agent_{os.getpid()}"
AGENT_PASSWORD = "adapt-test-agent-pw"
TIMEOUT = 1.0


@dataclass(frozen=True)
class Server:
    """A MariaDB server with the InterCode-SQL databases and a read-only agent user."""

    host: str
    port: int
    agent_user: str
    agent_password: str
    lower_case_table_names: int
    load_seconds: float
    method: str


def make_env(server: Server) -> InterCodeSQL:
    """An environment connected as the test's read-only agent user."""
    return InterCodeSQL(host=server.host, port=server.port, user=server.agent_user,
                        password=server.agent_password, statement_timeout=TIMEOUT)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "ic_spider_dev.json").is_file():
        pytest.skip(f"InterCode-SQL data not found at {DATA_DIR} (ic_spider_dev.json)")
    return DATA_DIR


@pytest.fixture(scope="session")
def server(data_dir: Path) -> Iterator[Server]:
    """Load the dump once per session; skip the reload when every database and table exists."""
    pytest.importorskip("pymysql", reason="pymysql is not installed")
    from adapt.envs.intercode_sql.loader import connect, load_sql

    try:
        conn = connect(host=HOST, port=PORT, user=ADMIN_USER, password=ADMIN_PASSWORD)
    except UserError as exc:
        pytest.skip(f"no MariaDB server for the InterCode-SQL tests: {exc}")
    with conn.cursor() as cur:
        cur.execute("SELECT @@lower_case_table_names")
        lower = int(cur.fetchone()[0])
    conn.close()
    started = time.perf_counter()
    report = load_sql(
        data_dir,
        host=HOST,
        port=PORT,
        admin_user=ADMIN_USER,
        admin_password=ADMIN_PASSWORD,
        agent_user=AGENT_USER,
        agent_password=AGENT_PASSWORD,
        reload=False,
    )
    yield Server(
        HOST, PORT, AGENT_USER, AGENT_PASSWORD, lower, time.perf_counter() - started, report.method
    )
    conn = connect(host=HOST, port=PORT, user=ADMIN_USER, password=ADMIN_PASSWORD)
    try:
        with conn.cursor() as cur:
            for host in ("%", "localhost"):
                cur.execute(f"DROP USER IF EXISTS '{AGENT_USER}'@'{host}'")
    finally:
        conn.close()


@pytest.fixture
def env(server: Server) -> Iterator[InterCodeSQL]:
    e = make_env(server)
    yield e
    e.close()
