"""Tests import only what they test: running the engine's tests loads no database or queue
client. The service fixtures are a plugin that imports their clients when a test uses one
(``tests/support/services.py``), and no ``conftest.py`` imports them at module level.

Each check runs pytest in a fresh process and reads that process's ``sys.modules`` at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the database and queue clients (and what brings them)
CLIENTS = ("sqlalchemy", "redis", "celery", "kombu", "psycopg2", "asyncpg", "aiosqlite")

_RUN = f"""
import json, sys
import pytest
code = pytest.main(sys.argv[1:])
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({CLIENTS!r}))
print("\\n" + json.dumps({{"code": int(code), "loaded": loaded}}))
"""


def clients_loaded(*args: str) -> list[str]:
    """The clients a pytest run with ``args`` imported; fails if the run does."""
    out = subprocess.run([sys.executable, "-c", _RUN, "-q", "-p", "no:cacheprovider", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return list(result["loaded"])


def test_collecting_the_engine_tests_imports_no_database_or_queue_client() -> None:
    assert clients_loaded("--collect-only", "tests/engine") == []


def test_the_check_sees_a_client_when_tests_import_one() -> None:
    assert "sqlalchemy" in clients_loaded("--collect-only", "tests/store/test_task_rows.py")


@pytest.mark.slow
def test_running_the_engine_tests_imports_no_database_or_queue_client() -> None:
    assert clients_loaded("tests/engine") == []
