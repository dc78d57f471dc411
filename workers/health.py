"""Container health checks: ``python -m workers.health api|worker`` exits 0 when healthy.

- ``api``: ``GET /healthz`` of the server on this machine answers 200 (port ``ADAPT_PORT``).
- ``worker``: a worker process on this host has a live row in the workers registry, the one
  its heartbeat renews (``adapt.store.workers``): a worker whose event loop is stuck, or that
  lost its database, stops renewing it and turns unhealthy.

docker-compose.yml runs them; they print one line saying why when unhealthy.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import urllib.request

from adapt.settings import Settings


def api_healthy(settings: Settings, timeout: float = 3.0) -> str | None:
    """``None`` when the API answers, else what went wrong."""
    url = f"http://127.0.0.1:{settings.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status = int(response.status)
    except OSError as exc:
        return f"{url}: {exc}"
    return None if status == 200 else f"{url}: HTTP {status}"


async def _live_here(settings: Settings, hostname: str) -> int:
    from sqlalchemy import func, select

    from adapt.store.db import create_engine, session_factory
    from adapt.store.models import WorkerRow, utcnow

    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            return int((await session.execute(
                select(func.count()).select_from(WorkerRow).where(
                    WorkerRow.hostname == hostname, WorkerRow.expires_at > utcnow()))
            ).scalar_one())
    finally:
        await engine.dispose()


def worker_healthy(settings: Settings, hostname: str | None = None) -> str | None:
    """``None`` when a worker on this host renews its registry row, else what went wrong."""
    host = hostname or socket.gethostname()
    try:
        live = asyncio.run(_live_here(settings, host))
    except Exception as exc:  # the database is unreachable: this worker cannot work either
        return f"cannot read the workers registry: {type(exc).__name__}: {exc}"
    return None if live else f"no live worker on {host} in the workers registry"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("api", "worker"):
        print("usage: python -m workers.health api|worker", file=sys.stderr)
        return 2
    settings = Settings()
    problem = api_healthy(settings) if argv[0] == "api" else worker_healthy(settings)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
