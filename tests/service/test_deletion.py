"""Deleting tasks: a tenant's tasks leave nothing of theirs in any table, prompt blocks other
tasks use stay, retention deletes old finished tasks in batches and never a running one, and a
writer that points at a block a deletion removed is refused and writes it again. Real SQLite
and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service import retention
from adapt.service.execute import execute_task
from adapt.service.host import WorkerHost
from adapt.service.retention import delete_tasks, purge
from adapt.settings import Settings
from adapt.sim import from_spec
from adapt.store.db import create_engine, session_factory
from adapt.store.models import Base, LLMCallRow, Task, WebhookDelivery, WebhookEndpoint, utcnow
from adapt.store.prompts import StoredPrompt, call_prompts, chain_blocks
from tests.service.helpers import insert_task, persisted_tree
from tests.service.test_execute import SIM, Counting, make_ctx


async def run(ctx: Any, tenant: str, seed: int) -> str:
    task_id = await insert_task(ctx.sessions, config={"seed": seed}, tenant=tenant)
    assert await execute_task(ctx, task_id) in ("succeeded", "failed")
    return task_id


async def prompts_of(sessions: async_sessionmaker[AsyncSession],
                     task_id: str) -> dict[int, StoredPrompt]:
    async with sessions() as session:
        return await call_prompts(session, task_id)


async def chains(sessions: async_sessionmaker[AsyncSession], ids: list[str]) -> set[str]:
    async with sessions() as session:
        return set(await chain_blocks(session, ids))


async def every_row(sessions: async_sessionmaker[AsyncSession]) -> dict[str, list[str]]:
    """Every row of every table, each as one text (its values as JSON)."""
    out: dict[str, list[str]] = {}
    async with sessions() as session:
        for table in Base.metadata.sorted_tables:
            rows = (await session.execute(select(table))).all()
            out[table.name] = [json.dumps(list(r), default=str) for r in rows]
    return out


async def orphan_blocks(sessions: async_sessionmaker[AsyncSession]) -> set[str]:
    """Blocks in no call's chain."""
    async with sessions() as session:
        every = set((await session.execute(text("SELECT hash FROM prompt_blocks"))).scalars())
        ids = list((await session.execute(select(Task.id))).scalars())
        used = set(await chain_blocks(session, ids)) if ids else set()
    return every - used


async def test_deleting_a_tenants_tasks_leaves_nothing_of_theirs(database_url: str) -> None:
    ctx = make_ctx(database_url, "w1")
    try:
        alice = [await run(ctx, "alice-7f3a", seed) for seed in (11, 3)]
        bob = await run(ctx, "bob", 5)
        async with ctx.sessions.begin() as session:  # alice's webhook endpoint and deliveries
            session.add(WebhookEndpoint(id="e" + alice[0][:31], tenant="alice-7f3a",
                                        task_id=alice[0], url="https://hooks.example/a",
                                        events=["task.finished"], secret="whsec_alice"))
            await session.flush()
            session.add(WebhookDelivery(id="d" + alice[0][:40], task_id=alice[0],
                                        endpoint_id="e" + alice[0][:31],
                                        event_type="task.finished", event_key="ordinal:1",
                                        payload={"task_id": alice[0]}))
        bob_prompts, bob_tree = await prompts_of(ctx.sessions, bob), \
            await persisted_tree(ctx.sessions, bob)
        only_alice = await chains(ctx.sessions, alice) - await chains(ctx.sessions, [bob])
        assert only_alice and await chains(ctx.sessions, [bob])
        assert all(p.prompt or p.messages for p in bob_prompts.values())

        done = await purge(ctx.sessions, tenant="alice-7f3a", batch=1)
        assert sorted(done.tasks) == sorted(alice) and done.batches == 2
        assert done.blocks >= len(only_alice)

        rows = await every_row(ctx.sessions)
        for table, texts in rows.items():
            for row in texts:
                assert "alice" not in row, f"{table} keeps a row of the tenant: {row[:200]}"
                for task_id in alice:
                    assert task_id not in row, f"{table} keeps a row of {task_id}: {row[:200]}"
        assert not await orphan_blocks(ctx.sessions)
        assert rows["tasks"] and rows["llm_calls"] and rows["prompt_blocks"]  # bob's stay
        assert await prompts_of(ctx.sessions, bob) == bob_prompts
        assert await persisted_tree(ctx.sessions, bob) == bob_tree
    finally:
        await ctx.aclose()


async def test_retention_deletes_old_finished_tasks_in_batches_never_active_ones(
        database_url: str) -> None:
    ctx = make_ctx(database_url, "w1")
    try:
        old = [await run(ctx, "t", 11)] + [await insert_task(ctx.sessions) for _ in range(4)]
        active = await run(ctx, "t", 11)  # the same prompts as old[0]: its blocks must stay
        queued = await insert_task(ctx.sessions)
        recent = await insert_task(ctx.sessions)
        long_ago, now = utcnow() - timedelta(days=10), utcnow()
        async with ctx.sessions.begin() as session:
            await session.execute(update(Task).where(Task.id.in_(old)).values(
                status="succeeded", finished_at=long_ago, created_at=long_ago))
            await session.execute(update(Task).where(Task.id == recent).values(
                status="failed", finished_at=now - timedelta(days=1)))
            await session.execute(update(Task).where(Task.id.in_([active, queued])).values(
                created_at=long_ago, started_at=long_ago))
            await session.execute(update(Task).where(Task.id == active).values(
                status="running", finished_at=None, lease_owner="w2", attempt=2,
                lease_expires_at=now + timedelta(minutes=5)))
        active_prompts = await prompts_of(ctx.sessions, active)

        done = await purge(ctx.sessions, before=now - timedelta(days=7), batch=2)
        assert sorted(done.tasks) == sorted(old) and done.batches == 3
        async with ctx.sessions() as session:
            left = dict((await session.execute(select(Task.id, Task.status))).all())
        assert left == {active: "running", queued: "queued", recent: "failed"}
        assert await prompts_of(ctx.sessions, active) == active_prompts
        assert all(p.prompt or p.messages for p in active_prompts.values())
    finally:
        await ctx.aclose()


async def test_the_worker_host_runs_retention_when_it_is_set(
        database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention, "RETENTION_INTERVAL", 0.05)
    monkeypatch.setattr("adapt.service.host.retention_forever",
                        lambda sessions, days: retention.retention_forever(
                            sessions, days, interval=0.05))
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": database_url,
                                        "retention_days": 2})
    host = WorkerHost(settings)
    ctx = host.start()
    try:
        expired = await insert_task(ctx.sessions)
        kept = await insert_task(ctx.sessions)
        async with ctx.sessions.begin() as session:
            await session.execute(update(Task).where(Task.id == expired).values(
                status="succeeded", finished_at=utcnow() - timedelta(days=3)))
            await session.execute(update(Task).where(Task.id == kept).values(
                status="succeeded", finished_at=utcnow() - timedelta(days=1)))
        for _ in range(200):
            async with ctx.sessions() as session:
                ids = set((await session.execute(select(Task.id))).scalars())
            if expired not in ids:
                break
            await asyncio.sleep(0.05)
        assert ids == {kept}
    finally:
        await host.aclose()


async def test_a_write_pointing_at_a_block_deleted_elsewhere_sends_it_again(
        database_url: str) -> None:
    """Task A's prompts are stored; this process takes their blocks as stored. Another
    process deletes A (and so the blocks). Task B, with the very same prompts, then points at
    them: the database refuses the write, and the sink writes it again with its blocks, in
    the same attempt (no call is paid twice)."""
    model = Counting(from_spec(SIM))
    ctx = make_ctx(database_url, "w1", model)
    other = create_engine(database_url)
    try:
        first = await run(ctx, "t", 11)
        reference, paid = await prompts_of(ctx.sessions, first), model.calls
        async with session_factory(other)() as session:
            deleted = await delete_tasks(session, [first])
        assert deleted.tasks == [first] and deleted.blocks > 0
        second = await run(ctx, "t", 11)
        assert model.calls == 2 * paid
        async with ctx.sessions() as session:
            assert (await session.get(Task, second)).attempt == 1  # type: ignore[union-attr]
        assert await prompts_of(ctx.sessions, second) == reference
        assert not await orphan_blocks(ctx.sessions)
    finally:
        await ctx.aclose()
        await other.dispose()


async def test_a_block_a_concurrent_write_points_at_is_not_deleted(pg_url: str) -> None:
    """A call that points at one of the blocks a deletion collects is committed while the
    deletion runs (PostgreSQL, READ COMMITTED): the deletion's check sees it, the deletion
    tries again and keeps the block; nothing points at a missing block."""
    ctx = make_ctx(pg_url, "w1")
    try:
        doomed = await run(ctx, "t", 11)
        async with ctx.sessions() as session:
            ref = (await session.execute(select(LLMCallRow.prompt_ref).where(
                LLMCallRow.task_id == doomed).limit(1))).scalar_one()
        keeper = await insert_task(ctx.sessions)
        writer = ctx.sessions()
        await writer.execute(text(
            "INSERT INTO llm_calls (task_id, id, role, model, simulated, stop, "
            "request_fingerprint, response, completion, prompt_tokens, completion_tokens, "
            "usage_estimated, latency_s, attempt, created_at, prompt_ref, chat, retries) "
            "VALUES (:t, 1, 'executor', 'sim', true, '[]', 'f', '{}', 'ok', 0, 0, false, 0, 1, "
            "now(), :ref, false, 0)"), {"t": keeper, "ref": ref})  # holds the block's key

        async def commit_later() -> None:
            await asyncio.sleep(0.5)
            await writer.commit()

        async with ctx.sessions() as session:
            _, deleted = await asyncio.gather(commit_later(), delete_tasks(session, [doomed]))
        await writer.close()
        assert deleted.tasks == [doomed]
        assert (await prompts_of(ctx.sessions, keeper))[1].prompt
        assert not await orphan_blocks(ctx.sessions)
    finally:
        await ctx.aclose()
