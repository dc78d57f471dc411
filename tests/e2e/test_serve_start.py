"""What a first ``adapt serve`` and ``adapt db`` say: the URLs to open, and the migrations in
one line (``adapt db`` lists them oldest first)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapt.settings import Settings
from api.serve import serve_url
from tests.e2e.test_embedded_serve import Server, free_port
from workers.health import api_healthy, worker_healthy


def test_a_first_start_says_where_to_go_and_sums_the_migrations_up(tmp_path: Path) -> None:
    server = Server(tmp_path, free_port())
    settings = Settings(port=server.port, data_dir=tmp_path)  # the server's embedded database
    try:
        server.start()
        # the containers' health checks (docker-compose.yml) against the real thing
        assert api_healthy(settings) is None
        # the embedded runner's registry row: its heartbeat's first beat writes it, which
        # may land just after the API answers (CI saw it once; a container's check retries)
        deadline = time.monotonic() + 10
        while worker_healthy(settings) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert worker_healthy(settings) is None
    finally:
        server.stop()
    assert "Connection refused" in str(api_healthy(settings))
    assert "no live worker on" in str(worker_healthy(settings))
    log = server.log.read_text()
    assert f"http://127.0.0.1:{server.port}/ui" in log
    assert f"the API's docs on http://127.0.0.1:{server.port}/docs" in log
    assert "Running upgrade" not in log and "Context impl" not in log
    (line,) = [x for x in log.splitlines() if "migration" in x]
    assert re.search(r"applied \d+ migrations \(0001 to \d{4}\)", line), line


def _db(tmp_path: Path, verb: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADAPT_DATA_DIR": str(tmp_path)}
    env.pop("ADAPT_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "adapt.cli", "db", verb], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_adapt_db_lists_migrations_oldest_first(tmp_path: Path) -> None:
    status = _db(tmp_path, "status")
    assert status.returncode == 1
    pending = re.findall(r"\b\d{4}\b", status.stderr)
    applied = _db(tmp_path, "upgrade")
    assert applied.returncode == 0, applied.stderr
    listed = re.findall(r"\b\d{4}\b", applied.stderr)
    assert listed[0] == "0001" and listed == sorted(listed) == pending
    assert "already up to date" in _db(tmp_path, "upgrade").stderr


@pytest.mark.parametrize(("host", "published", "url"), [
    ("127.0.0.1", None, "http://127.0.0.1:8000"),
    ("0.0.0.0", None, "http://127.0.0.1:8000"),
    ("0.0.0.0", "192.168.1.5", "http://192.168.1.5:8000"),
    ("::", None, "http://[::1]:8000"),
    ("[::1]", None, "http://[::1]:8000"),
])
def test_the_url_is_one_users_can_open(host: str, published: str | None, url: str) -> None:
    assert serve_url(Settings(published_host=published), host, 8000) == url
