"""``adapt.store.task_rows``: every conditional write on a task row, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import FinishedData
from adapt.store import task_rows as tasks
from adapt.store.batch import Batch
from adapt.store.event_log import ROW, expand
from adapt.store.models import EventRow, NodeRow, Task, utcnow
from adapt.store.sink import WRITERS

OWNER, OTHER = "host:1:a", "host:2:b"



async def new_task(sessions: async_sessionmaker[AsyncSession], task_id: str = "t1",
                   key: str | None = None) -> Task:
    async with sessions() as session:
        task = await tasks.insert(
            session, task_id, tenant="acme", environment="textcraft", environment_config={},
            goal=None, strategy="adapt", profile="default", d_max=3, run_config={},
            executor_model="sim:a", planner_model="sim:a", executor_simulated=True,
            planner_simulated=True, idempotency_key=key, request_hash="h" if key else None)
    assert task is not None
    return task


async def row(sessions: async_sessionmaker[AsyncSession], task_id: str = "t1") -> Task:
    task = await tasks.load(sessions, task_id)
    assert task is not None
    return task


async def event_log(sessions: async_sessionmaker[AsyncSession],
                    task_id: str = "t1") -> list[EventRow]:
    async with sessions() as session:
        return list((await session.execute(
            select(EventRow).where(EventRow.task_id == task_id).order_by(EventRow.seq)
        )).scalars())


async def test_insert_queues_a_task_and_refuses_a_taken_idempotency_key(sessions) -> None:  # type: ignore[no-untyped-def]
    task = await new_task(sessions, "t1", key="k")
    assert (task.status, task.attempt, task.last_seq, task.llm_calls) == ("queued", 0, 0, 0)
    async with sessions() as session:
        again = await tasks.insert(
            session, "t2", tenant="acme", environment="textcraft", strategy="adapt", d_max=3,
            executor_model="sim:a", planner_model="sim:a", idempotency_key="k")
        assert again is None
        found = await tasks.by_idempotency_key(session, "acme", "k")
        assert found is not None and found.id == "t1"
        assert await tasks.by_idempotency_key(session, "other", "k") is None
        assert await tasks.active_count(session, "acme") == 1
        assert await tasks.submitted_since(session, "acme", utcnow() - timedelta(minutes=1),
                                           10) == [task.created_at]
    assert await tasks.load(sessions, "t2") is None


async def test_claim_is_exclusive_until_the_lease_expires(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)
    assert await tasks.claim(sessions, "t1", OWNER, 30) == 1
    assert await tasks.claim(sessions, "t1", OTHER, 30) is None
    task = await row(sessions)
    assert (task.status, task.lease_owner, task.attempt) == ("running", OWNER, 1)
    assert task.started_at is not None
    # only the holder renews and reclaims
    assert await tasks.renew_leases(sessions, OWNER, 30) == {"t1": 1}
    assert await tasks.renew_leases(sessions, OTHER, 30) == {}
    assert await tasks.reclaim(sessions, "t1", 1, OTHER, 30) is None
    assert await tasks.reclaim(sessions, "t1", 1, OWNER, 30) == 2
    # an expired lease may be taken over; the old holder's writes are refused from then on
    assert await tasks.release_leases(sessions, OWNER, ["t1"]) == ["t1"]
    # a heartbeat of the old holder landing after the release does not extend it again
    assert await tasks.renew_leases(sessions, OWNER, 30) == {}
    assert await tasks.mark_due(sessions, utcnow(), queued_grace=30) == ["t1"]
    assert await tasks.claim(sessions, "t1", OTHER, 30) == 3
    assert await write(sessions, "t1", 2, OWNER, batch(1)) is None
    assert not await tasks.finish_with_error(sessions, "t1", 2, OWNER, "late")
    assert (await row(sessions)).status == "running"


def batch(events: int, *, final: dict[str, object] | None = None) -> Batch:
    return Batch(events=[{"type": "step", "payload": {"n": i}, "ordinal": i}
                         for i in range(events)], final=final)


async def write(sessions: async_sessionmaker[AsyncSession], task_id: str, attempt: int,
                owner: str, b: Batch, **values: object) -> tuple[int, bool] | None:
    """One batch through the sink's writer for this database (``adapt.store.batch``)."""
    engine = sessions.kw["bind"]
    totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, **values}
    return await WRITERS[engine.dialect.name](engine, task_id, attempt, owner, b, totals,
                                              utcnow())


async def test_batches_take_gap_free_numbers_and_the_last_one_finishes(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)
    attempt = await tasks.claim(sessions, "t1", OWNER, 30)
    assert attempt == 1
    assert await write(sessions, "t1", 1, OWNER, batch(3), calls=2, prompt_tokens=10) == (
        3, False)
    async with sessions() as session:
        running = await session.get(Task, "t1")
        assert running is not None
        assert not await tasks.cancel(session, running)  # requested: seen by the next batch
    final = {"status": "cancelled", "success": False, "reward": 0.0, "result": {"x": 1},
             "error": None, "max_depth": 1, "resolved_goal": "g"}
    assert await write(sessions, "t1", 1, OWNER, batch(2, final=final)) == (5, True)
    task = await row(sessions)
    assert (task.status, task.llm_calls, task.prompt_tokens, task.lease_owner, task.result) == (
        "cancelled", 2, 10, None, {"x": 1})
    assert task.finished and task.finished_at is not None
    async with sessions() as session:
        rows = (await session.execute(
            select(*ROW)
            .where(EventRow.task_id == "t1").order_by(EventRow.seq))).all()
    # each batch is one row (its events' ordinals are consecutive) holding every event
    assert [(r.seq, r.span) for r in rows] == [(1, 3), (4, 2)]
    assert [(seq, p) for r in rows for seq, _, _, _, p in expand(*r)] == [
        (1, {"n": 0}), (2, {"n": 1}), (3, {"n": 2}), (4, {"n": 0}), (5, {"n": 1})]
    # the attempt no longer holds a lease: a late batch writes nothing
    assert await write(sessions, "t1", 1, OWNER, batch(1)) is None
    assert (await row(sessions)).last_seq == 5


async def test_cancel_a_queued_task_ends_it_with_one_event(sessions) -> None:  # type: ignore[no-untyped-def]
    task = await new_task(sessions)
    async with sessions() as session:
        task = await session.get(Task, "t1")
        assert task is not None
        assert await tasks.cancel(session, task)
        assert (task.status, task.cancel_requested, task.last_seq) == ("cancelled", True, 1)
        assert task.error == tasks.CANCELLED_BEFORE_START
        assert not await tasks.cancel(session, task)  # finished: unchanged
        assert task.last_seq == 1
    [event] = await event_log(sessions)
    assert (event.seq, event.type, event.ordinal) == (1, "task.finished", None)
    assert event.payload == {"status": "cancelled", "result": None,
                             "error": tasks.CANCELLED_BEFORE_START}
    FinishedData.model_validate(event.payload)
    assert await tasks.claim(sessions, "t1", OWNER, 30) is None


async def test_cancel_a_running_task_only_requests_it(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)
    await tasks.claim(sessions, "t1", OWNER, 30)
    async with sessions() as session:
        task = await session.get(Task, "t1")
        assert task is not None
        assert not await tasks.cancel(session, task)
        assert (task.status, task.cancel_requested, task.last_seq) == ("running", True, 0)
    assert await event_log(sessions) == []


async def test_finish_with_error_then_requeue(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)
    await tasks.claim(sessions, "t1", OWNER, 30)
    async with sessions.begin() as session:
        session.add(NodeRow(task_id="t1", id=1, depth=1, kind="task", goal="g",
                            status="running"))
        await tasks.append_event(session, "t1", "node.created", {"node": {"id": 1}},
                                 ordinal=1)
    assert await tasks.finish_with_error(sessions, "t1", 1, OWNER, "provider unavailable")
    task = await row(sessions)
    assert (task.status, task.error, task.lease_owner, task.last_seq) == (
        "error", "provider unavailable", None, 2)
    async with sessions() as session:
        node = await session.get(NodeRow, ("t1", 1))
        assert node is not None and (node.status, node.error) == ("failed",
                                                                  "provider unavailable")
        task = await session.get(Task, "t1")
        assert task is not None
        assert await tasks.requeue(session, task)
        assert (task.status, task.error, task.last_seq) == ("queued", None, 3)
        assert not await tasks.requeue(session, task)  # queued already
        node = await session.get(NodeRow, ("t1", 1), populate_existing=True)
        assert node is not None and (node.status, node.error) == ("running", None)
    log = await event_log(sessions)
    assert [(e.seq, e.type) for e in log] == [(1, "node.created"), (2, "task.finished"),
                                             (3, "task.resumed")]
    assert log[1].payload == {"status": "error", "result": None,
                              "error": "provider unavailable"}
    assert log[2].payload == {"status": "queued", "after": "provider unavailable"}
    calls, stored = await tasks.replay_material(sessions, "t1")
    assert (calls, stored) == ([], 1)


async def test_append_event_refuses_when_the_condition_fails(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)
    with pytest.raises(tasks.TaskGone):
        async with sessions.begin() as session:
            await tasks.append_event(session, "t1", "step", {}, conditions=(
                Task.lease_owner == OWNER,))
    with pytest.raises(tasks.TaskGone):
        async with sessions.begin() as session:
            await tasks.append_event(session, "nope", "step", {})
    assert (await row(sessions)).last_seq == 0


async def test_concurrent_writers_never_reuse_or_skip_a_number(sessions, database_url) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)

    async def append(i: int) -> int:
        for _ in range(50):  # SQLite: a writer that finds the database locked tries again
            try:
                async with sessions.begin() as session:
                    return await tasks.append_event(session, "t1", "step", {"i": i})
            except Exception as exc:
                if "locked" not in str(exc):
                    raise
                await asyncio.sleep(0.05)
        raise AssertionError("database stayed locked")

    async def cancel() -> bool:
        async with sessions() as session:
            task = await session.get(Task, "t1")
            assert task is not None
            return await tasks.cancel(session, task)

    seqs = await asyncio.gather(*(append(i) for i in range(8)))
    assert await cancel()
    assert sorted(seqs) == list(range(1, 9))
    assert [e.seq for e in await event_log(sessions)] == list(range(1, 10))
    assert (await row(sessions)).last_seq == 9


async def test_sweeper_marks_due_tasks_once(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions, "q")
    await new_task(sessions, "r")
    await tasks.claim(sessions, "r", OWNER, 30)
    later = utcnow() + timedelta(seconds=60)
    # the running task's lease expired by then; the queued one is untouched for 10 s
    assert await tasks.mark_due(sessions, later, queued_grace=10) == ["q", "r"]
    assert await tasks.mark_due(sessions, later, queued_grace=10) == []
    assert await tasks.mark_due(sessions, later + timedelta(seconds=11), queued_grace=10,
                                queued=False) == ["r"]
    assert await tasks.leases_on_host(sessions, "host") == [("r", OWNER)]
    assert await tasks.leases_on_host(sessions, "elsewhere") == []


async def test_the_worker_that_ran_an_attempt_stays_on_the_row(sessions) -> None:  # type: ignore[no-untyped-def]
    await new_task(sessions)
    assert (await row(sessions)).worker is None
    assert await tasks.claim(sessions, "t1", OWNER, 30) == 1
    assert (await row(sessions)).worker == OWNER
    assert await tasks.release_leases(sessions, OWNER, ["t1"]) == ["t1"]
    assert await tasks.claim(sessions, "t1", OTHER, 30) == 2
    assert await tasks.finish_with_error(sessions, "t1", 2, OTHER, "stopped")
    task = await row(sessions)
    assert (task.status, task.lease_owner, task.worker) == ("error", None, OTHER)


def test_new_task_ids_are_22_hex_digits_and_differ() -> None:
    ids = {tasks.new_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == tasks.ID_DIGITS == 22 and int(i, 16) >= 0 for i in ids)
