"""Engine + persistence cost per LLM call, at zero model latency: null sink vs database sink.

    python -m benchmarks.overhead [--tasks 40] [--database postgres|sqlite|both] [--http]

Runs the same simulated TextCraft tasks (the model answers in this process, instantly) one
after another, first with no sink (the engine and the simulator alone), then through the real
``DbSink`` on a throw-away database. Prints wall and CPU milliseconds per LLM call, the
writes (each one transaction) and the SQL statements SQLAlchemy sent per call (SQLite's
writes go to the driver directly), and the figure against its goal: the database sink's
wall time per call (engine + persistence) <= 2 ms.

``--http`` measures the model client instead: CPU milliseconds per chat call from this
process to the simulator's HTTP server (zero latency, 200 calls in flight): the ``openai``
package's typed path (``chat.completions.create``) over one httpx connection pool (before),
the raw path ``OpenAIChatModel`` takes (``adapt.llm.openai_compat.models``) over one httpx pool,
over sharded httpx pools (the fallback), and over the ``openai`` package's aiohttp client, the
default (``adapt.llm.transport``).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from sqlalchemy import event

from adapt.engine.events import MemorySink, NullSink
from adapt.logsetup import setup_logging
from adapt.store.db import create_engine, session_factory
from adapt.store.sink import DbSink
from benchmarks.perfkit import (
    OWNER,
    SIM_SPEC,
    Clock,
    Figure,
    leased_task,
    load_avg,
    run_textcraft,
    scratch_database,
    sim_model,
    table,
)

GOAL_MS = 2.0
WARMUP = 3


async def _null(seeds: list[int]) -> dict[str, float]:
    model = sim_model()
    for seed in seeds[:WARMUP]:
        await run_textcraft(seed, NullSink(), model)
    calls = 0
    with Clock() as c:
        for seed in seeds:
            calls += (await run_textcraft(seed, NullSink(), model)).usage.llm_calls
    return {"calls": calls, "wall": c.wall, "cpu": c.cpu}


async def _db(url: str, seeds: list[int]) -> dict[str, float]:
    engine = create_engine(url)
    sessions = session_factory(engine)
    counts = {"statements": 0, "writes": 0}

    def on_statement(*_: Any) -> None:
        counts["statements"] += 1

    def counted(sink: DbSink) -> DbSink:
        write = sink._write

        async def wrapper(*args: Any) -> Any:
            counts["writes"] += 1
            return await write(*args)

        sink._write = wrapper  # type: ignore[assignment]
        return sink

    model = sim_model()
    try:
        for seed in seeds[:WARMUP]:
            task_id, attempt = await leased_task(sessions, seed)
            await run_textcraft(seed, DbSink(sessions, task_id, attempt, OWNER), model)
        leased = [await leased_task(sessions, seed) for seed in seeds]
        event.listen(engine.sync_engine, "before_cursor_execute", on_statement)
        calls = 0
        with Clock() as c:
            for seed, (task_id, attempt) in zip(seeds, leased, strict=True):
                sink = counted(DbSink(sessions, task_id, attempt, OWNER))
                calls += (await run_textcraft(seed, sink, model)).usage.llm_calls
    finally:
        await engine.dispose()
    return {"calls": calls, "wall": c.wall, "cpu": c.cpu, **counts}


async def _http(base_url: str, calls: int, concurrency: int = 200) -> dict[str, float]:
    import httpx

    from adapt.llm import ChatRequest, ClientPool, Message, OpenAIChatModel
    from adapt.llm.openai_compat.pool import MAX_CONNECTIONS, MAX_KEEPALIVE_CONNECTIONS
    from adapt.llm.transport import transport_for

    limits = httpx.Limits(max_connections=MAX_CONNECTIONS,
                          max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS)

    memory = MemorySink()
    await run_textcraft(0, memory)
    prompt = memory.calls[0].prompt or ""
    request = ChatRequest(messages=[Message(role="user", content=prompt)], stop=["\n"],
                          max_tokens=256, temperature=0.0)
    # before: one httpcore pool of 256 connections (64 kept alive), the typed path
    single = ClientPool(http_client=httpx.AsyncClient(limits=httpx.Limits(
        max_connections=256, max_keepalive_connections=64)))
    # then: httpx over 8-connection shards, all kept alive (the fallback without aiohttp)
    sharded = ClientPool(http_client=httpx.AsyncClient(
        transport=transport_for(limits), follow_redirects=False))
    default = ClientPool(max_connections=limits.max_connections or 256,
                         max_keepalive_connections=limits.max_keepalive_connections or 256)
    models = {name: OpenAIChatModel(SIM_SPEC, base_url=base_url, pool=pool, max_retries=0)
              for name, pool in (("single", single), ("sharded", sharded),
                                 ("default", default))}
    params = models["single"]._common_params(request)
    params["messages"] = [m.model_dump() for m in request.as_messages()]

    async def typed() -> None:
        response = await models["single"]._client().chat.completions.create(**params)
        if response.choices[0].message.content is None:
            raise RuntimeError("the simulator answered with no text")

    async def raw_single() -> None:
        await models["single"].complete(request)

    async def raw_sharded() -> None:
        await models["sharded"].complete(request)

    async def raw_default() -> None:
        await models["default"].complete(request)

    out: dict[str, float] = {}
    variants = (("typed, one httpx pool", typed), ("raw, one httpx pool", raw_single),
                ("raw, sharded httpx pools", raw_sharded),
                ("raw, openai's aiohttp client (the default)", raw_default))
    try:
        for name, call in variants * 2:  # the second round counts
            gate = asyncio.Semaphore(concurrency)

            async def one(call: Any = call, gate: asyncio.Semaphore = gate) -> None:
                async with gate:
                    await call()

            await asyncio.gather(*(one() for _ in range(concurrency)))  # warm-up
            with Clock() as c:
                await asyncio.gather(*(one() for _ in range(calls)))
            out[name] = 1000 * c.cpu / calls
    finally:
        for pool in (single, sharded, default):
            await pool.aclose()
    return out


def run_http(calls: int = 2000) -> dict[str, float]:
    import tempfile
    from pathlib import Path

    from benchmarks.processes import sim_server

    with tempfile.TemporaryDirectory(prefix="adapt-bench-") as tmp, \
            sim_server(0.0, Path(tmp)) as base_url:
        return asyncio.run(_http(base_url, calls))


def _ms(run: dict[str, float], key: str) -> float:
    return 1000 * run[key] / run["calls"]


def run(tasks: int = 40, databases: tuple[str, ...] = ("postgres",)) -> dict[str, Any]:
    seeds = list(range(tasks))
    out: dict[str, Any] = {"tasks": tasks, "null": asyncio.run(_null(seeds))}
    for kind in databases:
        with scratch_database(kind) as url:
            out[kind] = asyncio.run(_db(url, seeds))
    return out


def report(result: dict[str, Any]) -> str:
    null = result["null"]
    rows = [("tasks, LLM calls", f"{result['tasks']}, {null['calls']}"),
            ("null sink: wall / CPU per call", f"{_ms(null, 'wall'):.2f} / "
                                               f"{_ms(null, 'cpu'):.2f} ms")]
    figures = []
    for kind in ("postgres", "sqlite"):
        if kind not in result:
            continue
        r = result[kind]
        rows += [
            (f"{kind} sink: wall / CPU per call",
             f"{_ms(r, 'wall'):.2f} / {_ms(r, 'cpu'):.2f} ms "
             f"({_ms(r, 'wall') / _ms(null, 'wall'):.1f}x the null sink)"),
            (f"{kind} sink: writes (transactions) / SQL statements seen by SQLAlchemy, per call",
             f"{r['writes'] / r['calls']:.2f} / {r['statements'] / r['calls']:.2f}"),
        ]
        figures.append(Figure(f"engine + persistence per LLM call ({kind} sink, wall)",
                              _ms(r, "wall"), GOAL_MS, "ms"))
    rows.append(("load (1 min)", f"{load_avg():.2f}"))
    return "\n".join([table(rows), *(f.line() for f in figures)])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--database", choices=["postgres", "sqlite", "both"], default="postgres")
    parser.add_argument("--http", action="store_true",
                        help="measure the model client's HTTP path instead")
    parser.add_argument("--calls", type=int, default=2000, help="calls for --http")
    args = parser.parse_args(argv)
    setup_logging(False)
    if args.http:
        http = run_http(args.calls)
        print(table([*((f"client CPU per chat call, 200 in flight: {name}", f"{ms:.2f} ms")
                       for name, ms in http.items()),
                     ("load (1 min)", f"{load_avg():.2f}")]))
        return dict(http)
    kinds = ("postgres", "sqlite") if args.database == "both" else (args.database,)
    result = run(args.tasks, kinds)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
