"""Shared constants of the InterCode-SQL tests: where the data is, how to reach MariaDB."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA_DIR = (
    Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "intercode-sql"
).resolve()

HOST = "127.0.0.1"
PORT = 3306
ADMIN_USER = "root"
ADMIN_PASSWORD = ""
AGENT_USER = "adapt_test_agent"
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
