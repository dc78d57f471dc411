"""Engine + persistence cost per LLM call, at zero model latency: null sink vs database sink.

    python -m adapt.bench.overhead [--tasks 40] [--database postgres|sqlite|both]

Runs the same simulated TextCraft tasks (the model answers in this process, instantly) one
after another, first with no sink (the engine and the simulator alone), then through the real
``DbSink`` on a throw-away database. Prints wall and CPU milliseconds per LLM call, the SQL
statements and transactions per call, and the figure against its goal: the database sink's
wall time per call (engine + persistence) <= 2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from sqlalchemy import event

from adapt.bench.perfkit import (
    OWNER,
    Clock,
    Figure,
    leased_task,
    load_avg,
    run_textcraft,
    scratch_database,
    sim_model,
    table,
)
from adapt.engine.events import NullSink
from adapt.store.db import create_engine, session_factory
from adapt.store.sink import DbSink

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
    counts = {"statements": 0, "transactions": 0}

    def on_statement(*_: Any) -> None:
        counts["statements"] += 1

    def on_begin(*_: Any) -> None:
        counts["transactions"] += 1

    model = sim_model()
    try:
        for seed in seeds[:WARMUP]:
            task_id, attempt = await leased_task(sessions, seed)
            await run_textcraft(seed, DbSink(sessions, task_id, attempt, OWNER), model)
        leased = [await leased_task(sessions, seed) for seed in seeds]
        event.listen(engine.sync_engine, "before_cursor_execute", on_statement)
        event.listen(engine.sync_engine, "begin", on_begin)
        calls = 0
        with Clock() as c:
            for seed, (task_id, attempt) in zip(seeds, leased, strict=True):
                sink = DbSink(sessions, task_id, attempt, OWNER)
                calls += (await run_textcraft(seed, sink, model)).usage.llm_calls
    finally:
        await engine.dispose()
    return {"calls": calls, "wall": c.wall, "cpu": c.cpu, **counts}


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
            (f"{kind} sink: statements / transactions per call",
             f"{r['statements'] / r['calls']:.2f} / {r['transactions'] / r['calls']:.2f}"),
        ]
        figures.append(Figure(f"engine + persistence per LLM call ({kind} sink, wall)",
                              _ms(r, "wall"), GOAL_MS, "ms"))
    rows.append(("load (1 min)", f"{load_avg():.2f}"))
    return "\n".join([table(rows), *(f.line() for f in figures)])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--database", choices=["postgres", "sqlite", "both"], default="postgres")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    kinds = ("postgres", "sqlite") if args.database == "both" else (args.database,)
    result = run(args.tasks, kinds)
    print(report(result))  # the benchmark's output
    return result


if __name__ == "__main__":
    main()
