"""Reading a big task over HTTP, the measurement: the tree, a node's detail and the whole event
log. The command, which starts the API it measures, is this package's ``__main__``:

    python -m benchmarks.tree_read [--nodes 5000] [--database postgres|sqlite] [--repeat 30]

:func:`grow` writes one task of at least ``nodes`` nodes from short simulated TextCraft runs
through the real ``DbSink`` (``perfkit.Concat``: every node, step, LLM call and event as a
worker writes them); :func:`measure` times, over real HTTP against a server that counts its SQL
statements (``/_bench/statements``) and can forget its rendered trees (``/_bench/forget``):

- ``GET /tasks/{id}/tree``, p50 and p90 of ``repeat`` requests that each render the tree
  from the database (the server's cache of rendered bodies is emptied before each), the p50
  when the finished task's body is served from that cache, and the SQL statements one request
  issues;
- ``GET /tasks/{id}/nodes/{node_id}`` of a node with LLM calls;
- the event log replayed as JSON pages (``?since=``, 1,000 per page) and as Server-Sent Events:
  bytes and seconds.

The figure: the rendered tree's p50 <= 50 ms. (Before the cache existed, every GET rendered.)
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx

from adapt.store.db import create_engine, session_factory
from adapt.store.sink import DbSink
from benchmarks.perfkit import (
    OWNER,
    Clock,
    Concat,
    Figure,
    leased_task,
    load_avg,
    run_textcraft,
    sim_model,
    table,
)

GOAL_MS = 50.0


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
