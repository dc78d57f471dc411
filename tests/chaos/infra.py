"""Private PostgreSQL and Redis servers for fault-injection tests.

Each server runs from the machine's binaries (``initdb``/``pg_ctl`` under
``/usr/lib/postgresql/*/bin``, ``redis-server`` on ``PATH``) on a free loopback port with its
data in a temporary directory, so a test may kill, restart or cut it off without touching the
machine's own services.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg2
from psycopg2 import sql

from adapt.store.migrate import upgrade


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise FileNotFoundError(f"{name} not found (install the PostgreSQL server package)")
    return candidates[-1]


def _as_postgres() -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its tools as the ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


class PrivatePostgres:
    """A PostgreSQL cluster of our own (trust auth, no fsync) that tests may stop and start.
    Commits are synchronous, as in a default PostgreSQL: a server killed with ``-m immediate``
    keeps every transaction it acknowledged (fsync only matters when the machine itself
    crashes). With ``synchronous_commit=off`` it loses the last ~200 ms of them, which adapt
    does not promise to survive (docs/durability.md).
    Its files live in a fresh directory under the system temp dir (readable by the
    ``postgres`` user when the tests run as root); ``close`` stops it and removes them."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="adapt-chaos-pg-"))
        self.dir = self.root / "pgdata"
        self.sock = self.root / "sock"
        self.sock.mkdir()
        self.log = self.root / "postgres.log"
        self.log.touch()
        if os.geteuid() == 0:
            import pwd

            pw = pwd.getpwnam("postgres")
            for path in (self.root, self.sock, self.log):
                os.chown(path, pw.pw_uid, pw.pw_gid)
        self.port = free_port()
        subprocess.run([*_as_postgres(), pg_bin("initdb"), "-D", str(self.dir), "-A", "trust",
                        "-U", "postgres", "--no-sync"], check=True, capture_output=True)
        self.start()

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c full_page_writes=off -c max_connections=300")
        subprocess.run([*_as_postgres(), pg_bin("pg_ctl"), "-D", str(self.dir), "-l",
                        str(self.log), "-o", opts, "-w", "-t", "60", "start"], check=True,
                       capture_output=True)

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run([*_as_postgres(), pg_bin("pg_ctl"), "-D", str(self.dir), "-m", mode,
                        "-w", "stop"], check=False, capture_output=True)

    def _admin(self) -> psycopg2.extensions.connection:
        conn = psycopg2.connect(self.admin_url)
        conn.autocommit = True
        return conn

    def create_database(self) -> str:
        """A new, migrated database; returns its URL."""
        name = f"chaos_{uuid.uuid4().hex[:10]}"
        conn = self._admin()
        try:
            with conn.cursor() as cur:
                cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        finally:
            conn.close()
        url = f"postgresql://postgres@127.0.0.1:{self.port}/{name}"
        upgrade(url)
        return url

    def terminate_backends(self, url: str) -> int:
        """``pg_terminate_backend`` on every connection to ``url``'s database; returns how many."""
        name = url.rsplit("/", 1)[1]
        conn = self._admin()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
                row = cur.fetchone()
                return int(row[0]) if row else 0
        finally:
            conn.close()

    def close(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """A ``redis-server`` of our own (no persistence) that tests may kill and start again on
    the same port."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        exe = shutil.which("redis-server") or "/usr/bin/redis-server"
        log = (self.dir / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        _wait_port(self.port, 20)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(20)
        self.proc = None

    def restart(self, down_seconds: float = 1.0, sig: int = signal.SIGKILL) -> None:
        self.kill(sig)
        time.sleep(down_seconds)
        self.start()

    def close(self) -> None:
        self.kill(signal.SIGKILL)
