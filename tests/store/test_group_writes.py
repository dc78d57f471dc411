"""``adapt.store.batch_group``: several tasks' batches in one PostgreSQL statement store what
each batch stores alone, each write learns its own outcome, and a failed group falls back to
writing each batch alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.store import batch_group
from adapt.store import task_rows as tasks
from adapt.store.batch import Batch, refused_for_a_block
from adapt.store.batch_group import group_writer, write_grouped
from adapt.store.db import create_engine, session_factory
from adapt.store.event_log import stored_events
from adapt.store.models import LLMCallRow, NodeRow, StepRow, Task, utcnow
from adapt.store.sink import DbSink
from benchmarks.perfkit import OWNER, leased_task, run_textcraft, sim_model

CLAIMER = "host:1:group"


@pytest.fixture
async def sessions(pg_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(pg_url)
    yield session_factory(engine)
    await engine.dispose()


def _plain(row: Any, skip: set[str]) -> dict[str, Any]:
    return {c.key: getattr(row, c.key) for c in row.__table__.columns if c.key not in skip}


async def _stored(sessions: async_sessionmaker[AsyncSession], task_id: str) -> dict[str, Any]:
    """Everything stored of a task that does not depend on when it ran or its id."""
    varying = {"task_id", "created_at", "updated_at", "latency_s"}
    async with sessions() as session:
        nodes = (await session.execute(select(NodeRow).where(NodeRow.task_id == task_id)
                                       .order_by(NodeRow.id))).scalars()
        steps = (await session.execute(select(StepRow).where(StepRow.task_id == task_id)
                                       .order_by(StepRow.node_id, StepRow.index))).scalars()
        calls = (await session.execute(select(LLMCallRow).where(LLMCallRow.task_id == task_id)
                                       .order_by(LLMCallRow.id))).scalars()
        task = await session.get(Task, task_id)
        assert task is not None
        out = {
            "nodes": [_plain(r, varying) for r in nodes],
            "steps": [_plain(r, varying) for r in steps],
            "calls": [_plain(r, varying) for r in calls],
            "task": {k: getattr(task, k) for k in (
                "status", "success", "reward", "result", "error", "max_depth", "last_seq",
                "nodes_count", "llm_calls", "prompt_tokens", "completion_tokens", "cost_usd",
                "lease_owner", "lease_expires_at", "resolved_goal")},
        }
    async with sessions() as session:
        out["events"] = await stored_events(session, task_id)
    return out


def _timeless(value: Any) -> Any:
    """``value`` without the run's wall-clock time (``wall_seconds``), wherever it is."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "wall_seconds"}
    if isinstance(value, list | tuple):
        return [_timeless(v) for v in value]
    return value


async def test_tasks_written_together_store_what_each_stores_alone(sessions) -> None:  # type: ignore[no-untyped-def]
    """Twelve simulated TextCraft tasks run at once (their writes grouped) store, row for
    row, what the same tasks store run one after another (each write alone)."""
    seeds = list(range(12))
    model = sim_model()

    async def one(seed: int) -> str:
        task_id, attempt = await leased_task(sessions, seed)
        await run_textcraft(seed, DbSink(sessions, task_id, attempt, OWNER), model)
        return task_id

    writer = group_writer(sessions.kw["bind"])
    together = await asyncio.gather(*(one(s) for s in seeds))
    grouped = (writer.statements, writer.writes)
    assert grouped[1] > 0 and grouped[0] < grouped[1] * 0.8, grouped  # groups were sent
    alone = [await one(s) for s in seeds]
    assert writer.statements - grouped[0] == writer.writes - grouped[1]  # one by one
    for seed, a, b in zip(seeds, together, alone, strict=True):
        mine, theirs = await _stored(sessions, a), await _stored(sessions, b)
        assert _timeless(mine) == _timeless(theirs), f"seed {seed}"
        assert mine["task"]["status"] == "succeeded" and mine["events"]


def _batch(events: int, final: dict[str, Any] | None = None) -> Batch:
    return Batch(events=[{"type": "step", "payload": {"n": i}, "ordinal": i}
                         for i in range(events)], final=final)


TOTALS = {"calls": 1, "prompt_tokens": 5, "completion_tokens": 2, "cost_usd": 0.5}


async def _claimed(sessions: async_sessionmaker[AsyncSession], task_id: str) -> int:
    async with sessions() as session:
        await tasks.insert(
            session, task_id, tenant="acme", environment="textcraft", environment_config={},
            goal=None, strategy="adapt", profile="default", d_max=3, run_config={},
            executor_model="sim:a", planner_model="sim:a", executor_simulated=True,
            planner_simulated=True)
    attempt = await tasks.claim(sessions, task_id, CLAIMER, 60)
    assert attempt is not None
    return attempt


async def test_each_write_of_a_group_learns_its_own_outcome(sessions) -> None:  # type: ignore[no-untyped-def]
    engine = sessions.kw["bind"]
    for t in ("a", "b", "c", "d"):
        await _claimed(sessions, t)
    # c's lease is lost; d is cancelled; b's batch ends its task
    assert await tasks.release_leases(sessions, CLAIMER, ["c"]) == ["c"]
    async with sessions() as session:
        d = await session.get(Task, "d")
        assert d is not None
        await tasks.cancel(session, d)
    final = {"status": "succeeded", "success": True, "reward": 1.0, "result": {"x": 1},
             "error": None, "max_depth": 2, "resolved_goal": "g"}
    writer = group_writer(engine)
    before = writer.statements
    now = utcnow()
    outcomes = await asyncio.gather(
        write_grouped(engine, "a", 1, CLAIMER, _batch(3), TOTALS, now),
        write_grouped(engine, "b", 1, CLAIMER, _batch(2, final), TOTALS, now),
        write_grouped(engine, "c", 1, CLAIMER, _batch(4), TOTALS, now),
        write_grouped(engine, "d", 1, CLAIMER, _batch(1), {**TOTALS, "cost_usd": None}, now))
    assert writer.statements == before + 1  # one statement for the four
    assert outcomes == [(3, False), (2, False), None, (1, True)]
    rows = {t: await tasks.load(sessions, t) for t in "abcd"}
    a, b, c, d2 = (rows[t] for t in "abcd")
    assert a is not None and b is not None and c is not None and d2 is not None
    assert (a.status, a.lease_owner, a.llm_calls, a.prompt_tokens, a.cost_usd, a.result) == (
        "running", CLAIMER, 1, 5, 0.5, None)
    assert (b.status, b.success, b.lease_owner, b.result, b.resolved_goal) == (
        "succeeded", True, None, {"x": 1}, "g")
    assert b.finished_at is not None and a.finished_at is None
    assert (c.last_seq, c.llm_calls) == (0, 0)  # nothing of c's batch
    assert d2.cost_usd is None  # a call of unknown cost: the total is unknown
    async with sessions() as session:
        assert await stored_events(session, "c") == []
        assert [e[4] for e in await stored_events(session, "a")] == [
            {"n": 0}, {"n": 1}, {"n": 2}]


async def test_a_group_that_fails_writes_each_batch_alone(sessions) -> None:  # type: ignore[no-untyped-def]
    """One batch of the group points at a prompt block that is not stored: the others are
    written, and that one's write fails as it would alone (so its sink resends its blocks)."""
    engine = sessions.kw["bind"]
    for t in ("a", "b", "c"):
        await _claimed(sessions, t)
    bad = _batch(1)
    bad.calls.append({
        "id": 1, "node_id": 1, "role": "executor", "model": "sim:a", "request_model": "sim:a",
        "simulated": True, "prompt_ref": "f" * 32, "chat": False, "stop": None,
        "request_fingerprint": "x", "response": {}, "completion": "c", "prompt_tokens": 1,
        "completion_tokens": 1, "usage_estimated": False, "latency_s": 0.0, "cost_usd": 0.0,
        "monitor": None, "retries": 0})
    now = utcnow()
    outcomes = await asyncio.gather(
        write_grouped(engine, "a", 1, CLAIMER, _batch(2), TOTALS, now),
        write_grouped(engine, "b", 1, CLAIMER, bad, TOTALS, now),
        write_grouped(engine, "c", 1, CLAIMER, _batch(1), TOTALS, now),
        return_exceptions=True)
    assert outcomes[0] == (2, False) and outcomes[2] == (1, False)
    assert isinstance(outcomes[1], IntegrityError) and refused_for_a_block(outcomes[1])
    b = await tasks.load(sessions, "b")
    assert b is not None and b.last_seq == 0


async def _hammer(sessions: async_sessionmaker[AsyncSession], ids: list[str],
                  beside: Callable[[], Awaitable[object]]) -> int:
    """40 rounds of group writes of every task in ``ids`` (in alternating orders), with
    ``beside`` run again and again meanwhile; how many times it ran. No group statement may
    fail (PostgreSQL aborts one statement of a deadlock), and every write lands."""
    engine = sessions.kw["bind"]
    stop = asyncio.Event()

    async def again() -> int:
        n = 0
        while not stop.is_set():
            await beside()
            n += 1
        return n

    writer = group_writer(engine)
    fallbacks = writer.fallbacks
    runs = asyncio.ensure_future(again())
    try:
        for round_ in range(40):
            order = ids if round_ % 2 else list(reversed(ids))
            outcomes = await asyncio.gather(*(
                write_grouped(engine, t, 1, CLAIMER, _batch(1), TOTALS, utcnow())
                for t in order))
            assert None not in outcomes
    finally:
        stop.set()
    n = await runs
    assert writer.fallbacks == fallbacks  # no group statement failed (e.g. in a deadlock)
    assert {(await tasks.load(sessions, t)).last_seq for t in ids} == {40}  # type: ignore[union-attr]
    return n


async def test_group_writes_and_lease_renewals_never_deadlock(sessions, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Group writes lock their task rows in id order, as a lease renewal of the same tasks
    does: hammered side by side, neither fails (PostgreSQL would abort one of a cycle)."""
    monkeypatch.setattr(batch_group, "IN_FLIGHT", 4)
    ids = [f"t{i:02d}" for i in range(24)]
    for t in ids:
        await _claimed(sessions, t)

    async def renew() -> None:
        assert len(await tasks.renew_leases(sessions, CLAIMER, 60)) == len(ids)

    assert await _hammer(sessions, ids, renew) > 0


async def test_group_writes_and_the_sweeper_never_deadlock(sessions, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The sweeper marks tasks oldest first, yet locks their rows in id order as a group write
    does: with the oldest tasks the highest ids, hammered side by side (a live attempt may
    still write after its lease expired), neither fails."""
    monkeypatch.setattr(batch_group, "IN_FLIGHT", 4)
    ids = [f"t{i:02d}" for i in range(24)]
    for t in reversed(ids):  # stored (and scanned) highest id first
        await _claimed(sessions, t)
    start = utcnow()
    async with sessions.begin() as session:  # ages opposite to ids; every lease expired
        for i, t in reversed(list(enumerate(ids))):
            await session.execute(update(Task).where(Task.id == t).values(
                created_at=start - timedelta(seconds=i), lease_expires_at=start,
                updated_at=start))
    sweeps = iter(range(1, 10**6))

    async def sweep() -> None:  # each a minute after the last, so every task is due again
        due = await tasks.mark_due(sessions, start + timedelta(minutes=next(sweeps)),
                                   queued_grace=1)
        assert len(due) == len(ids)

    assert await _hammer(sessions, ids, sweep) > 0


async def test_the_sweeper_locks_task_rows_in_id_order(sessions) -> None:  # type: ignore[no-untyped-def]
    """With the lowest id's row held by another transaction, a sweep waits for it before it
    locks any other row (it locks in id order), though it marks the oldest first and the
    table is scanned highest id first: the highest id's row stays free to lock."""
    engine = sessions.kw["bind"]
    ids = [f"s{i:02d}" for i in range(8)]
    for t in reversed(ids):
        await _claimed(sessions, t)
    start = utcnow()
    async with sessions.begin() as session:  # the highest id the oldest; every lease expired
        for i, t in reversed(list(enumerate(ids))):
            await session.execute(update(Task).where(Task.id == t).values(
                created_at=start - timedelta(seconds=i), lease_expires_at=start,
                updated_at=start))

    def lock(task_id: str, nowait: bool = False) -> Any:
        return select(Task.id).where(Task.id == task_id).with_for_update(nowait=nowait)

    async with engine.connect() as holder:
        await holder.execute(lock(ids[0]))  # in its own transaction, held
        sweep = asyncio.ensure_future(tasks.mark_due(sessions, start + timedelta(minutes=1),
                                                     queued_grace=1))
        await asyncio.sleep(0.5)  # the sweep is waiting for the held row
        assert not sweep.done()
        async with engine.connect() as probe:
            await probe.execute(lock(ids[-1], nowait=True))  # raises if the sweep holds it
            await probe.rollback()
        await holder.rollback()
    assert await sweep == list(reversed(ids))  # oldest first
