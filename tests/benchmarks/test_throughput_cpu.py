"""Whose CPU the throughput bench reports (``benchmarks.throughput.cpu``): the PostgreSQL
backends of the bench's database, split into the driver's (by ``application_name``) and the
workers', each party per LLM call on its own line."""

from __future__ import annotations

import math
import re
import time

import psycopg2
import pytest

from benchmarks.throughput.cpu import DRIVER_APP, backend_cpu, process_cpu
from benchmarks.throughput.measure import cpu_per_call, format_table

BURN = "SELECT count(*) FROM generate_series(1, 3000000)"


def test_backend_cpu_is_split_by_whose_connection_spent_it(pg_url: str) -> None:
    dsn = pg_url.replace("postgresql+asyncpg://", "postgresql://")
    worker = psycopg2.connect(dsn)
    driver = psycopg2.connect(dsn, application_name=DRIVER_APP)
    try:
        with backend_cpu(pg_url) as backends:
            assert backends is not None
            before = backends.read()
            with worker.cursor() as cur:
                cur.execute(BURN)
            time.sleep(1.2)  # two samples: the sampler has seen both backends
            with driver.cursor() as cur:
                cur.execute("SELECT 1")
            after = backends.read()
    finally:
        worker.close()
        driver.close()
    spent = {k: after[k] - before[k] for k in after}
    assert spent["workers"] > 0.05
    assert spent["driver"] < spent["workers"] / 5


def test_no_backends_are_read_for_sqlite(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with backend_cpu(f"sqlite:///{tmp_path}/x.db") as backends:
        assert backends is None


def test_each_party_per_call_and_their_sum_are_printed() -> None:
    before = {"worker": 1.0, "pg_workers": 2.0, "pg_driver": 0.5, "driver": 3.0}
    after = {"worker": 2.5, "pg_workers": 2.8, "pg_driver": 0.6, "driver": 3.2}
    per_call = cpu_per_call(before, after, 1000)
    assert per_call == pytest.approx({"cpu_ms_per_call": 1.5, "cpu_ms_per_call_pg_workers": 0.8,
                                      "cpu_ms_per_call_pg_driver": 0.1,
                                      "cpu_ms_per_call_driver": 0.2})
    result = {"mode": "worker", "processes": 1, "latency_s": 1.0, "steady": True, "tasks": 10,
              "tasks_run": 30, "succeeded": 30, "settle_s": 2.0, "window_s": 60.0,
              "replaced": 20, "llm_calls": 580.0, "steady_llm_calls_per_s": 9.7,
              "ideal_llm_calls_per_s": 10.0, "efficiency": 0.97, **per_call}
    text = format_table(result)
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in text.splitlines()
                if re.search(r"\S\s{2,}\S", line))
    assert rows["CPU per LLM call: worker process"] == "1.50 ms"
    assert rows["CPU per LLM call: PostgreSQL backends serving the worker(s)"] == "0.80 ms"
    assert rows["CPU per LLM call: the bench driver's process (dispatch, polling)"] == "0.20 ms"
    assert rows["CPU per LLM call: worker + its PostgreSQL backends"] == "2.30 ms"
    assert rows["CPU per LLM call: every party above"] == "2.60 ms"
    assert rows["efficiency (steady)"] == "97%"
    assert "PostgreSQL CPU per LLM call: 0.8 ms (goal <= 1 ms" in text
    nan = cpu_per_call(before, {**after, "pg_workers": math.nan}, 1000)
    assert "not measured" in format_table({**result, **nan})
    assert process_cpu() > 0


def test_a_steady_run_replaces_finished_tasks_and_measures_its_window() -> None:
    """Embedded runner on SQLite, 4 tasks kept running for 3 s at 50 ms per call: tasks
    finish in the window and new ones take their place."""
    from benchmarks.throughput.__main__ import run

    result = run(tasks=4, latency=0.05, mode="inprocess", steady=3.0)
    assert result["steady"] and result["tasks"] == 4
    assert result["replaced"] > 0 and result["tasks_run"] >= 4 + result["replaced"]
    assert result["succeeded"] == result["tasks_run"]
    assert result["window_s"] == pytest.approx(3.0, abs=1.0)
    assert 0 < result["efficiency"] <= 1.2 and result["cpu_ms_per_call"] > 0
    assert math.isnan(result["cpu_ms_per_call_driver"])  # the driver is the runner here
