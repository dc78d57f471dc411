"""Whose CPU a throughput run costs: a process's (the worker, this driver) and the PostgreSQL
backends serving the bench's database, all read from ``/proc`` (Linux; the database server
must run on this host, else its figure is NaN).

Backends are found in ``pg_stat_activity`` (``datname`` the bench's database) every
``every`` seconds by a thread of their own, and split by ``application_name``: the driver's
connections name themselves :data:`DRIVER_APP`, every other backend of the database is the
workers'. A backend that starts during the run counts from zero; one that exits between two
samples loses what it spent since the last (pooled connections live as long as the run).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

#: the ``application_name`` of the driver's own database connections
DRIVER_APP = "adapt-bench-driver"


def process_cpu(pid: int | None = None) -> float:
    """CPU seconds (user + system) of process ``pid`` (None: this process) so far."""
    if pid is None:
        return time.process_time()
    # Linux: utime and stime, in clock ticks, are fields 14 and 15 of /proc/PID/stat (the
    # command name, field 2, may hold spaces: split after its closing parenthesis)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu(pid: int | None = None) -> float:
    """CPU seconds (user + system) of the children process ``pid`` (None: this process) has
    waited for so far (those that exited and were reaped: e.g. an MCP server process after
    its episode, a check)."""
    if pid is None:
        times = os.times()
        return times.children_user + times.children_system
    # cutime and cstime: fields 16 and 17
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


class BackendCPU:
    """CPU seconds the database's backends spent since :meth:`start`, by group (``driver``,
    ``workers``); :meth:`read` samples now."""

    def __init__(self, dsn: str, database: str, every: float = 0.5) -> None:
        self.dsn, self.database, self.every = dsn, database, every
        self._base: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._group: dict[int, str] = {}
        self._gone = {"driver": 0.0, "workers": 0.0}  # backends whose pid was reused
        #: the database's committed transactions (``pg_stat_database``), first and latest
        self._commits0 = self._commits = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.available = True

    def _sample(self, conn: object, first: bool = False) -> None:
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT pid, application_name FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> pg_backend_pid()", (self.database,))
            rows = cur.fetchall()
            cur.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                        (self.database,))
            commits = cur.fetchone()
        with self._lock:
            if commits is not None:
                self._commits = int(commits[0])
                if first:
                    self._commits0 = self._commits
            for pid, app in rows:
                try:
                    cpu = process_cpu(int(pid))
                except (OSError, IndexError, ValueError):
                    self.available = False
                    continue
                group = "driver" if app == DRIVER_APP else "workers"
                if pid in self._base and (cpu < self._last[pid] or group != self._group[pid]):
                    # the pid of a backend that exited, reused: keep what the old one spent
                    self._gone[self._group[pid]] += self._last[pid] - self._base[pid]
                    del self._base[pid]
                if pid not in self._base:
                    self._base[pid] = cpu if first else 0.0
                    self._group[pid] = group
                self._last[pid] = cpu

    def _loop(self) -> None:
        import psycopg2

        conn = psycopg2.connect(self.dsn)
        conn.autocommit = True
        try:
            self._sample(conn, first=True)
            self._ready.set()
            while not self._stop.wait(self.every):
                self._sample(conn)
        finally:
            conn.close()

    def start(self) -> None:
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="backend-cpu", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def commits(self) -> int:
        """Transactions the database committed since :meth:`start`, every connection's (as
        of the latest sample: PostgreSQL publishes them about once a second)."""
        with self._lock:
            return self._commits - self._commits0

    def read(self) -> dict[str, float]:
        """Seconds per group so far (the live backends read now); NaN when ``/proc`` does not
        show the server's processes."""
        with self._lock:
            for pid in list(self._last):
                with contextlib.suppress(OSError, IndexError, ValueError):
                    self._last[pid] = max(self._last[pid], process_cpu(pid))
            out = dict(self._gone)
            for pid, last in self._last.items():
                out[self._group[pid]] += last - self._base[pid]
        if not self.available or not self._last:
            return {k: float("nan") for k in out}
        return out


@contextlib.contextmanager
def backend_cpu(url: str) -> Iterator[BackendCPU | None]:
    """A running :class:`BackendCPU` for the PostgreSQL database of ``url`` (None for other
    databases)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql" or not parsed.database:
        yield None
        return
    dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    sampler = BackendCPU(dsn, parsed.database)
    sampler.start()
    try:
        yield sampler
    finally:
        sampler.stop()
