"""Executing persisted tasks: the tree is written as it grows, crashes resume by replay, stale
attempts cannot write, cancellation is cooperative. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import update

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse
from adapt.service.errors import LeaseLost
from adapt.service.execute import ServiceContext, claim, execute_task
from adapt.settings import Settings
from adapt.sim import from_spec
from adapt.store.models import Task, utcnow
from tests.service.helpers import events, insert_task, persisted_tree, task_row

SIM = "sim:textcraft?capability=1"


class Counting:
    """Wraps a model; counts live calls; can hang forever after ``hang_after`` calls."""

    def __init__(self, inner: ChatModel, hang_after: int | None = None) -> None:
        self.inner, self.hang_after = inner, hang_after
        self.name, self.simulated = inner.name, inner.simulated
        self.calls = 0
        self.hung = asyncio.Event()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self.hang_after is not None and self.calls >= self.hang_after:
            self.hung.set()
            await asyncio.Event().wait()
        self.calls += 1
        return await self.inner.complete(request)


def make_ctx(url: str, worker: str, model: ChatModel | None = None,
             **settings: object) -> ServiceContext:
    s = Settings.model_validate({"ADAPT_DATABASE_URL": url, "lease_seconds": 30,
                                 "heartbeat_seconds": 0.05, **settings})
    ctx = ServiceContext.create(s)
    ctx.worker_id = worker
    if model is not None:
        ctx.load_model = lambda spec: model  # type: ignore[method-assign]
    return ctx


@pytest.fixture
async def ctx(database_url: str) -> AsyncIterator[ServiceContext]:
    c = make_ctx(database_url, "w1")
    yield c
    await c.aclose()


async def reference_tree(config: dict[str, object], rc: RunConfig) -> MemorySink:
    sink = MemorySink()
    await run_task(TextCraft(), config, rc, from_spec(SIM), sink=sink)
    return sink


def as_persisted(sink: MemorySink) -> dict[str, object]:
    nodes = {n.id: n.model_dump(mode="json") for n in sink.nodes.values()}
    steps = {nid: [s.model_dump(mode="json") for s in ss] for nid, ss in sink.steps.items()}
    return {"nodes": nodes, "steps": steps}


async def test_persisted_tree_equals_the_engine_tree(ctx: ServiceContext) -> None:
    task_id = await insert_task(ctx.sessions, config={"seed": 11})
    assert await execute_task(ctx, task_id) == "succeeded"
    expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
    assert await persisted_tree(ctx.sessions, task_id) == expected

    task = await task_row(ctx.sessions, task_id)
    assert task.status == "succeeded" and task.reward == 1.0 and task.lease_owner is None
    assert task.resolved_goal == "craft comparator" and task.max_depth == 3
    evs = await events(ctx.sessions, task_id)
    assert [e.seq for e in evs] == list(range(1, len(evs) + 1)) == list(range(1, task.last_seq + 1))
    assert evs[-1].type == "task.finished" and evs[-1].data["status"] == "succeeded"
    # 15 calls with verification on (22 with it off: verified sub-goals end early or are skipped)
    assert task.llm_calls == sum(e.type == "llm_call" for e in evs) == 15


async def test_a_finished_task_is_not_run_again(ctx: ServiceContext) -> None:
    task_id = await insert_task(ctx.sessions)
    assert await execute_task(ctx, task_id) == "succeeded"
    assert await execute_task(ctx, task_id) is None
    assert await claim(ctx, task_id) is None


async def test_crash_resume_replays_finished_calls(database_url: str) -> None:
    first = Counting(from_spec(SIM), hang_after=9)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11})
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 10)
    run1.cancel()  # the worker dies mid-task (its lease stays)
    with pytest.raises(asyncio.CancelledError):
        await run1
    before = await task_row(ctx1.sessions, task_id)
    assert before.status == "running" and before.attempt == 1
    done_before = len(await events(ctx1.sessions, task_id))

    second = Counting(from_spec(SIM))
    ctx2 = make_ctx(database_url, "w2", second)
    assert await execute_task(ctx2, task_id) is None, "lease still held: no takeover"
    async with ctx2.sessions.begin() as s:  # let the lease expire
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    assert await execute_task(ctx2, task_id) == "succeeded"

    task = await task_row(ctx2.sessions, task_id)
    assert task.attempt == 2 and task.llm_calls == 15
    assert second.calls == 15 - 9, "finished calls were paid for again"
    expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
    assert await persisted_tree(ctx2.sessions, task_id) == expected
    evs = await events(ctx2.sessions, task_id)
    assert [e.seq for e in evs] == list(range(1, len(evs) + 1)) and len(evs) > done_before
    assert [e.ordinal for e in evs] == list(range(1, len(evs) + 1))
    await ctx1.aclose()
    await ctx2.aclose()


async def test_a_stale_attempt_cannot_write(database_url: str) -> None:
    slow = Counting(from_spec(SIM), hang_after=3)
    # w1 stalls: its heartbeat (every 1 s) is slower than the sweeper below
    ctx1 = make_ctx(database_url, "w1", slow, heartbeat_seconds=1.0)
    task_id = await insert_task(ctx1.sessions)
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(slow.hung.wait(), 10)
    async with ctx1.sessions.begin() as s:  # a sweeper decides w1 is dead; w2 claims
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    ctx2 = make_ctx(database_url, "w2")
    assert await claim(ctx2, task_id) == 2
    # w1's heartbeat notices within one beat and stops the stale attempt
    assert await asyncio.wait_for(run1, 10) is None
    task = await task_row(ctx1.sessions, task_id)
    assert task.lease_owner == "w2" and task.attempt == 2
    from adapt.engine.events import NodeUpdated
    from adapt.engine.tree import Node
    from adapt.store.sink import DbSink

    stale = DbSink(ctx1.sessions, task_id, 1, "w1")
    await stale.emit(NodeUpdated(node=Node(id=1, goal="x")))  # buffered until the flush
    with pytest.raises(LeaseLost):
        await stale.flush()
    await ctx1.aclose()
    await ctx2.aclose()


async def test_cancel_is_cooperative(ctx: ServiceContext) -> None:
    task_id = await insert_task(ctx.sessions)
    async with ctx.sessions.begin() as s:
        await s.execute(update(Task).where(Task.id == task_id).values(cancel_requested=True))
    assert await execute_task(ctx, task_id) == "cancelled"
    task = await task_row(ctx.sessions, task_id)
    assert task.status == "cancelled" and task.llm_calls == 0
    assert (await events(ctx.sessions, task_id))[-1].type == "task.finished"


async def test_bad_environment_at_run_time_is_an_error_with_a_message(ctx: ServiceContext) -> None:
    task_id = await insert_task(ctx.sessions, environment="gone")
    assert await execute_task(ctx, task_id) == "error"
    task = await task_row(ctx.sessions, task_id)
    assert task.status == "error" and "unknown environment 'gone'" in (task.error or "")
    evs = await events(ctx.sessions, task_id)
    assert [e.type for e in evs] == ["task.finished"]


async def test_prompts_are_not_stored_when_disabled(database_url: str) -> None:
    ctx = make_ctx(database_url, "w1", store_prompts=False)
    task_id = await insert_task(ctx.sessions)
    assert await execute_task(ctx, task_id) == "succeeded"
    from sqlalchemy import select

    from adapt.store.models import LLMCallRow

    async with ctx.sessions() as s:
        rows = (await s.execute(select(LLMCallRow).where(LLMCallRow.task_id == task_id))).scalars().all()
    assert rows and all(r.prompt is None and r.prompt_ref is None and r.completion
                        for r in rows)
    assert all(len(r.request_fingerprint) == 64 for r in rows)
    await ctx.aclose()


async def test_a_task_claimed_during_a_lease_renewal_is_not_stopped(
    database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The heartbeat judges only attempts that existed when its renewal started: a task claimed
    while the renewal was in flight is absent from the renewal's answer, yet its lease is
    fresh (under load this stopped new tasks, which then waited for their lease to expire)."""
    import adapt.service.execute as execute_module

    slow = Counting(from_spec(SIM), hang_after=1)
    ctx = make_ctx(database_url, "w1", slow, heartbeat_seconds=0.05)
    renewing, claimed = asyncio.Event(), asyncio.Event()
    real_renew = execute_module.task_rows.renew_leases

    async def renew_while_a_claim_lands(*args: object, **kwargs: object) -> dict[str, int]:
        owned = await real_renew(*args, **kwargs)  # type: ignore[arg-type]
        renewing.set()
        await claimed.wait()  # the claim below commits after this renewal's UPDATE
        return owned

    first = await insert_task(ctx.sessions)
    monkeypatch.setattr(execute_module.task_rows, "renew_leases", renew_while_a_claim_lands)
    run1 = asyncio.create_task(execute_task(ctx, first))
    await asyncio.wait_for(renewing.wait(), 10)
    second = await insert_task(ctx.sessions, config={"seed": 5})
    run2 = asyncio.create_task(execute_task(ctx, second))
    while second not in ctx.attempts():
        await asyncio.sleep(0.005)
    claimed.set()
    await asyncio.sleep(0.3)  # several beats, each would have stopped the second attempt
    monkeypatch.setattr(execute_module.task_rows, "renew_leases", real_renew)
    assert not run2.done(), "the fresh attempt was stopped as if its lease were lost"
    for run in (run1, run2):
        run.cancel()
    await asyncio.gather(run1, run2, return_exceptions=True)
    await ctx.aclose()
