"""Reading a big task over HTTP: the tree, a node's detail and the whole event log.

    python -m adapt.bench.tree_read [--nodes 5000] [--database postgres|sqlite] [--repeat 30]

Grows one task of at least ``nodes`` nodes from short simulated TextCraft runs written through
the real ``DbSink`` (``perfkit.Concat``: every node, step, LLM call and event as a worker
writes them), starts the API with uvicorn in a subprocess (its default loop and HTTP parser:
uvloop / httptools when installed) and times, over real HTTP:

- ``GET /tasks/{id}/tree``, p50 and p90 of ``repeat`` requests that each render the tree
  from the database (the server's cache of rendered bodies is emptied before each), the p50
  when the finished task's body is served from that cache, and the SQL statements one request
  issues (counted by the server);
- ``GET /tasks/{id}/nodes/{node_id}`` of a node with LLM calls;
- the event log replayed as JSON pages (``?since=``, 1,000 per page) and as Server-Sent Events:
  bytes and seconds.

The figure: the rendered tree's p50 <= 50 ms. (Before the cache existed, every GET rendered.)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from adapt.bench.perfkit import (
    OWNER,
    Clock,
    Concat,
    Figure,
    leased_task,
    load_avg,
    run_textcraft,
    scratch_database,
    sim_model,
    table,
)
from adapt.bench.throughput import _env, _free_port, _process
from adapt.store.db import create_engine, session_factory
from adapt.store.sink import DbSink

GOAL_MS = 50.0

_API_SCRIPT = """
import sys, logging, uvicorn
from sqlalchemy import event
from adapt.settings import Settings
from api.main import create_app
import adapt.store.db as db

counted = {"n": 0}
_create = db.create_engine
def create_engine(url, **kw):
    engine = _create(url, **kw)
    def count(*_):
        counted["n"] += 1
    event.listen(engine.sync_engine, "before_cursor_execute", count)
    return engine
import api.main
api.main.create_engine = create_engine
settings = Settings.model_validate({"ADAPT_DATABASE_URL": sys.argv[2],
                                    "broker_url": "redis://127.0.0.1:1/0"})
app = create_app(settings)
@app.get("/_bench/statements", include_in_schema=False)
async def statements() -> dict:
    return {"n": counted["n"]}
@app.get("/_bench/forget", include_in_schema=False)
async def forget() -> dict:
    cache = getattr(app.state, "rendered_trees", None)
    if cache is not None:
        app.state.rendered_trees = type(cache)()
    return {}
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False)
"""


async def grow(url: str, nodes: int) -> tuple[str, int, int]:
    """One task of at least ``nodes`` nodes; returns (task id, nodes, LLM calls)."""
    engine = create_engine(url)
    sessions = session_factory(engine)
    try:
        task_id, attempt = await leased_task(sessions, 0, tenant="default")
        concat = Concat(DbSink(sessions, task_id, attempt, OWNER))
        await concat.start()
        model = sim_model()
        seed = 0
        result = None
        while concat.nodes < nodes:
            concat.next_run()
            result = await run_textcraft(seed, concat, model)
            seed += 1
        if result is None:
            raise RuntimeError(f"no task ran: the tree would have no nodes (asked {nodes})")
        await concat.finish(result)
    finally:
        await engine.dispose()
    return task_id, concat.nodes, concat.calls


def _timed_gets(client: httpx.Client, path: str, repeat: int,
                headers: dict[str, str] | None = None, *, fresh: bool = False
                ) -> tuple[list[float], httpx.Response]:
    """``repeat`` timed GETs (after one warm-up); ``fresh``: the server's rendered-tree cache
    is emptied before each (untimed), so each GET renders the tree from the database."""
    times = []
    response = client.get(path, headers=headers)  # warm-up
    for _ in range(repeat):
        if fresh:
            client.get("/_bench/forget")
        start = time.perf_counter()
        response = client.get(path, headers=headers)
        times.append(1000 * (time.perf_counter() - start))
        if response.status_code >= 400:
            response.raise_for_status()
    return times, response


def _replay_json(client: httpx.Client, task_id: str) -> tuple[int, int, float]:
    since, size, events = 0, 0, 0
    with Clock() as c:
        while True:
            r = client.get(f"/tasks/{task_id}/events", params={"since": since, "limit": 1000})
            r.raise_for_status()
            size += len(r.content)
            page = r.json()
            events += len(page["events"])
            since = page["last_seq"]
            if page["finished"]:
                break
    return events, size, c.wall


def _replay_sse(client: httpx.Client, task_id: str) -> tuple[int, float]:
    size = 0
    with Clock() as c, client.stream("GET", f"/tasks/{task_id}/events",
                                     headers={"Accept": "text/event-stream"}) as r:
        for chunk in r.iter_bytes():
            size += len(chunk)
    return size, c.wall


def measure(base: str, task_id: str, repeat: int) -> dict[str, Any]:
    with httpx.Client(base_url=base, timeout=120) as client:
        before = client.get("/_bench/statements").json()["n"]
        client.get(f"/tasks/{task_id}/tree").raise_for_status()
        statements = client.get("/_bench/statements").json()["n"] - before
        cached = statistics.median(_timed_gets(client, f"/tasks/{task_id}/tree", repeat)[0])
        tree, response = _timed_gets(client, f"/tasks/{task_id}/tree", repeat, fresh=True)
        etag = response.headers.get("etag", "")
        unchanged, _ = _timed_gets(client, f"/tasks/{task_id}/tree", repeat,
                                   {"If-None-Match": etag})
        tree_bytes = len(response.content)
        nodes = response.json()["nodes_count"]
        node_id = 2
        detail, detail_response = _timed_gets(client, f"/tasks/{task_id}/nodes/{node_id}",
                                              repeat)
        events, json_bytes, json_s = _replay_json(client, task_id)
        sse_bytes, sse_s = _replay_sse(client, task_id)
    tree.sort()
    return {"nodes": nodes, "tree_p50_ms": statistics.median(tree),
            "tree_p90_ms": tree[int(0.9 * (len(tree) - 1))], "tree_cached_p50_ms": cached,
            "tree_304_p50_ms": statistics.median(unchanged), "tree_bytes": tree_bytes,
            "tree_statements": statements, "node_p50_ms": statistics.median(detail),
            "node_bytes": len(detail_response.content), "events": events,
            "json_bytes": json_bytes, "json_s": json_s, "sse_bytes": sse_bytes, "sse_s": sse_s}


def run(nodes: int = 5000, database: str = "postgres", repeat: int = 30) -> dict[str, Any]:
    with scratch_database(database) as url:
        with Clock() as c:
            task_id, _, calls = asyncio.run(grow(url, nodes))
        port = _free_port()
        with tempfile.TemporaryDirectory(prefix="adapt-bench-") as tmp:
            args = [sys.executable, "-c", _API_SCRIPT, str(port), url]
            with _process(args, _env(), Path(tmp) / "api.log") as proc:
                base = f"http://127.0.0.1:{port}"
                deadline = time.monotonic() + 30
                while True:
                    try:
                        httpx.get(f"{base}/healthz", timeout=1)
                        break
                    except httpx.HTTPError:
                        if proc.poll() is not None or time.monotonic() > deadline:
                            raise RuntimeError((Path(tmp) / "api.log").read_text()) from None
                        time.sleep(0.1)
                result = measure(base, task_id, repeat)
    return {"database": database, "calls": calls, "grow_s": c.wall, **result}


def report(r: dict[str, Any]) -> str:
    rows = [
        ("database, nodes, LLM calls, events",
         f"{r['database']}, {r['nodes']}, {r['calls']}, {r['events']}"),
        ("GET tree, rendered: p50 / p90", f"{r['tree_p50_ms']:.1f} / {r['tree_p90_ms']:.1f} ms "
                                          f"({r['tree_bytes'] / 1e6:.2f} MB)"),
        ("GET tree, finished task's cached body: p50", f"{r['tree_cached_p50_ms']:.1f} ms"),
        ("GET tree: 304 (If-None-Match) p50", f"{r['tree_304_p50_ms']:.1f} ms"),
        ("GET tree: SQL statements", f"{r['tree_statements']}"),
        ("GET node detail p50", f"{r['node_p50_ms']:.1f} ms ({r['node_bytes']:,} B)"),
        ("events as JSON pages", f"{r['json_bytes'] / 1e6:.1f} MB in {r['json_s']:.2f} s"),
        ("events as SSE", f"{r['sse_bytes'] / 1e6:.1f} MB in {r['sse_s']:.2f} s"),
        ("load (1 min)", f"{load_avg():.2f}"),
    ]
    figure = Figure(f"GET /tasks/{{id}}/tree p50, {r['nodes']} nodes ({r['database']})",
                    r["tree_p50_ms"], GOAL_MS, "ms")
    return "\n".join([table(rows), figure.line()])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    result = run(args.nodes, args.database, args.repeat)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
