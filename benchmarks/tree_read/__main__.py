"""``python -m benchmarks.tree_read``: the tree-read benchmark's command. It starts the API it
measures; the measurement is :mod:`benchmarks.tree_read.measure`.

    python -m benchmarks.tree_read [--nodes 5000] [--database postgres|sqlite] [--repeat 30]

Grows one task of at least ``nodes`` nodes, starts this API with uvicorn in a subprocess (its
default loop and HTTP parser: uvloop / httptools when installed), instrumented with two routes
that only this benchmark adds (``/_bench/statements``: the SQL statements the server has issued
since the first call of that route; ``/_bench/forget``: empty the cache of rendered trees), and
prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from sqlalchemy import event

from adapt.logsetup import setup_logging
from adapt.settings import Settings
from api.main import create_app
from api.routes.tree import RenderedTrees
from benchmarks.perfkit import Clock, scratch_database
from benchmarks.processes import bench_env, free_port, logged_process, wait_http
from benchmarks.tree_read.measure import grow, measure, report


def instrumented_app(database_url: str) -> FastAPI:
    """The API on ``database_url`` (no broker: the benchmark only reads) with the benchmark's
    two routes."""
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": database_url,
                                        "broker_url": "redis://127.0.0.1:1/0"})
    app = create_app(settings)
    counted = {"n": 0, "listening": 0}

    def count(*_: object) -> None:
        counted["n"] += 1

    @app.get("/_bench/statements", include_in_schema=False)
    async def statements(request: Request) -> dict[str, int]:
        if not counted["listening"]:  # the engine exists once the app has started
            event.listen(request.app.state.engine.sync_engine, "before_cursor_execute", count)
            counted["listening"] = 1
        return {"n": counted["n"]}

    @app.get("/_bench/forget", include_in_schema=False)
    async def forget(request: Request) -> dict[str, str]:
        request.app.state.rendered_trees = RenderedTrees()
        return {}

    return app


def serve(port: int, database_url: str) -> None:
    uvicorn.run(instrumented_app(database_url), host="127.0.0.1", port=port,
                log_level="warning", access_log=False)


def run(nodes: int = 5000, database: str = "postgres", repeat: int = 30) -> dict[str, Any]:
    with scratch_database(database) as url:
        with Clock() as c:
            task_id, _, calls = asyncio.run(grow(url, nodes))
        port = free_port()
        with tempfile.TemporaryDirectory(prefix="adapt-bench-") as tmp:
            log = Path(tmp) / "api.log"
            args = [sys.executable, "-m", "benchmarks.tree_read", "--serve", str(port),
                    "--database-url", url]
            with logged_process(args, bench_env(), log) as proc:
                base = f"http://127.0.0.1:{port}"
                try:
                    wait_http(proc, f"{base}/healthz", "the API", 30)
                except RuntimeError:
                    raise RuntimeError(log.read_text()) from None
                result = measure(base, task_id, repeat)
    return {"database": database, "calls": calls, "grow_s": c.wall, **result}


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--repeat", type=int, default=30)
    # the instrumented server the benchmark starts (not for a user)
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--database-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    setup_logging(False)
    if args.serve is not None:
        serve(args.serve, args.database_url)
        return None
    result = run(args.nodes, args.database, args.repeat)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
