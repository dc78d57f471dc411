"""The throughput bench's call rate in a window (``benchmarks.throughput.measure``): every running task
counts at its pace, including one that answers fewer than twice inside a short window."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from adapt.store.db import create_engine, session_factory
from adapt.store.models import LLMCallRow
from benchmarks.perfkit import scratch_database
from benchmarks.throughput.measure import _calls_between, call_rate, insert_tasks

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def paced(first: float, every: float, n: int) -> list[datetime]:
    return [at(first + i * every) for i in range(n)]


def test_a_steady_task_counts_its_pace_in_any_window() -> None:
    answers = {"a": paced(0.0, 1.0, 20)}
    for after, until in ((3.0, 13.0), (3.3, 4.9), (5.2, 5.7)):  # the last holds no answer
        assert call_rate(answers, at(after), at(until)) == pytest.approx(1.0)


def test_a_short_window_counts_every_running_task() -> None:
    # 10 tasks, one call per second each, out of phase: in a 1.5 s window most tasks answer
    # once; every one of them is running at 1 call/s
    answers = {str(k): paced(0.1 * k, 1.0, 30) for k in range(10)}
    assert call_rate(answers, at(10.2), at(11.7)) == pytest.approx(10.0)
    # tasks at different paces add up
    answers["slow"] = paced(0.0, 2.0, 15)
    assert call_rate(answers, at(10.2), at(11.7)) == pytest.approx(10.5)


def test_a_task_before_its_first_answer_or_after_its_last_adds_nothing() -> None:
    answers = {"late": paced(5.0, 1.0, 5), "done": paced(0.0, 1.0, 3)}  # 5..9 and 0..2
    assert call_rate(answers, at(0.0), at(10.0)) == pytest.approx((4 + 2) / 10)
    assert call_rate(answers, at(3.0), at(3.0)) != call_rate(answers, at(3.0), at(3.0))  # NaN


def test_the_rate_is_read_from_the_recorded_calls() -> None:
    async def main(url: str) -> tuple[float, float]:
        engine = create_engine(url)
        sessions = session_factory(engine)
        try:
            ids = await insert_tasks(sessions, 4, "sim:textcraft")
            async with sessions.begin() as session:
                for k, task_id in enumerate(ids):
                    session.add_all(LLMCallRow(
                        task_id=task_id, id=i, role="executor", model="sim", prompt="p",
                        request_fingerprint="f", response={}, completion="c", latency_s=1.0,
                        created_at=when)
                        for i, when in enumerate(paced(0.25 * k, 1.0, 12)))
            # a window of 1.2 s: some tasks answer once in it, none twice
            return await _calls_between(sessions, ids, at(5.1), at(6.3))
        finally:
            await engine.dispose()

    with scratch_database("sqlite") as url:
        rate, latency = asyncio.run(main(url))
    assert rate == pytest.approx(4.0)
    assert latency == pytest.approx(1.0)
