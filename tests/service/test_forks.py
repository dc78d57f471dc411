"""Forks: a finished task re-run from one of its nodes. The history before the node is
replayed from the origin's recorded calls (the fake model counts every live call: none of them
is one the origin made before the node), the environment is rebuilt by replaying the actions,
and a fork with no overrides grows the origin's tree again. Real SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from adapt.engine import RunConfig
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse
from adapt.llm.recording import request_fingerprint
from adapt.service import approvals as approval_service
from adapt.service.errors import InvalidField, TaskActive
from adapt.service.execute import ServiceContext, execute_task
from adapt.service.fork import fork_task
from adapt.sim import from_spec
from adapt.store import approvals as approval_store
from adapt.store.models import LLMCallRow, Task
from tests.service.helpers import insert_task, persisted_tree, task_row
from tests.service.test_execute import SIM, make_ctx


class Live:
    """Counts live calls and keeps their fingerprints."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name, self.simulated = inner.name, inner.simulated
        self.asked: list[str] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.asked.append(request_fingerprint(request))
        return await self.inner.complete(request)


async def run(database_url: str, task_id: str, model: ChatModel, worker: str) -> str | None:
    ctx = make_ctx(database_url, worker, model)
    try:
        return await execute_task(ctx, task_id)
    finally:
        await ctx.aclose()


async def fingerprints(ctx: ServiceContext, task_id: str) -> list[str]:
    async with ctx.sessions() as s:
        return list((await s.execute(select(LLMCallRow.request_fingerprint).where(
            LLMCallRow.task_id == task_id).order_by(LLMCallRow.id))).scalars())


async def fork(ctx: ServiceContext, task_id: str, node_id: int,
               overrides: dict[str, Any] | None = None) -> Task:
    async with ctx.sessions() as s:
        source = await s.get(Task, task_id)
        assert source is not None
        return (await fork_task(s, ctx.settings, "default", source, node_id,
                                overrides or {})).task


@pytest.fixture
async def origin(database_url: str) -> tuple[ServiceContext, str]:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11},
                                run_config=RunConfig(d_max=4))
    assert await run(database_url, task_id, from_spec(SIM), "w1") == "succeeded"
    return ctx, task_id


@pytest.mark.parametrize(("node_id", "before"), [(1, 0), (2, 2), (5, 14), (10, 11)],
                         ids=["root", "inner", "last-leaf", "leaf"])
async def test_a_fork_pays_nothing_before_the_node_and_grows_the_same_tree(
    database_url: str, origin: tuple[ServiceContext, str], node_id: int, before: int,
) -> None:
    ctx, task_id = origin
    recorded = await fingerprints(ctx, task_id)
    assert len(recorded) == 15
    forked = await fork(ctx, task_id, node_id)
    assert forked.forked_from == {"task_id": task_id, "node_id": node_id}
    assert forked.fork_calls == before and forked.status == "queued"
    live = Live(from_spec(SIM))
    assert await run(database_url, forked.id, live, "w2") == "succeeded"
    assert len(live.asked) == 15 - before, "a call before the fork point was paid again"
    assert live.asked == recorded[before:]
    assert await persisted_tree(ctx.sessions, forked.id) == await persisted_tree(
        ctx.sessions, task_id)
    assert await fingerprints(ctx, forked.id) == recorded
    # a fork of the fork, at the same node, replays the fork's own record
    again = await fork(ctx, forked.id, node_id)
    live2 = Live(from_spec(SIM))
    assert await run(database_url, again.id, live2, "w3") == "succeeded"
    assert len(live2.asked) == 15 - before
    assert await persisted_tree(ctx.sessions, again.id) == await persisted_tree(
        ctx.sessions, task_id)


async def test_a_fork_with_another_model_diverges_after_the_node(
    database_url: str, origin: tuple[ServiceContext, str],
) -> None:
    ctx, task_id = origin
    strong = "sim:textcraft?capability=3"
    forked = await fork(ctx, task_id, 2, {"executor": {"model": strong}, "d_max": 3})
    assert forked.executor_model == strong and forked.d_max == 3
    assert forked.planner_model == SIM, "the planner stays the origin's"
    live = Live(from_spec(strong))
    assert await run(database_url, forked.id, live, "w2") == "succeeded"
    mine, theirs = (await persisted_tree(ctx.sessions, forked.id),
                    await persisted_tree(ctx.sessions, task_id))
    # the history before node 2 is the origin's; node 2 itself is solved another way
    assert (await fingerprints(ctx, forked.id))[:2] == (await fingerprints(ctx, task_id))[:2]
    assert mine["nodes"][2] != theirs["nodes"][2]
    assert len(mine["nodes"]) < len(theirs["nodes"])
    assert len(live.asked) == (await task_row(ctx.sessions, forked.id)).llm_calls - 2


async def test_a_fork_is_refused_where_it_cannot_be(
    database_url: str, origin: tuple[ServiceContext, str],
) -> None:
    ctx, task_id = origin
    with pytest.raises(InvalidField) as bad:
        await fork(ctx, task_id, 99)
    assert bad.value.field == "node_id"
    with pytest.raises(InvalidField) as bad:
        await fork(ctx, task_id, 1, {"d_max": 0})
    assert bad.value.field == "overrides.d_max"
    queued = await insert_task(ctx.sessions, config={"seed": 11})
    with pytest.raises(TaskActive):
        await fork(ctx, queued, 1)



async def test_a_fork_that_stops_before_its_fork_point_pays_nothing_before_it(
    database_url: str, origin: tuple[ServiceContext, str],
) -> None:
    """A fork that asks for plan approvals stops in its history (at the root's plan) with
    part of it recorded; its next attempts still replay the origin's calls before the node."""
    ctx, task_id = origin
    forked = await fork(ctx, task_id, 5, {"approval": {"plans": True}})
    assert forked.fork_calls == 14
    workers: list[Live] = []
    while True:
        live = Live(from_spec(SIM))
        workers.append(live)
        status = await run(database_url, forked.id, live, f"w{len(workers) + 1}")
        if status != "waiting":
            break
        async with ctx.sessions() as s:
            task = await s.get(Task, forked.id)
            assert task is not None
            for row in await approval_store.for_task(s, forked.id, status="pending"):
                await approval_service.decide(s, task, row.id, "approve", reason=None,
                                              proposal=None, decided_by=None,
                                              tenant="default")
    assert status == "succeeded" and len(workers) == 3, "two plans, two waits"
    assert [len(w.asked) for w in workers] == [0, 0, 1], "a call before the node was paid"
    assert await persisted_tree(ctx.sessions, forked.id) == await persisted_tree(
        ctx.sessions, task_id)


async def test_a_failed_task_forked_with_a_deeper_d_max_succeeds(database_url: str) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11},
                                run_config=RunConfig(d_max=2))
    assert await run(database_url, task_id, from_spec(SIM), "w1") == "failed"
    recorded = await fingerprints(ctx, task_id)
    forked = await fork(ctx, task_id, 2, {"d_max": 4})
    assert forked.d_max == 4 and forked.fork_calls == 2
    live = Live(from_spec(SIM))
    assert await run(database_url, forked.id, live, "w2") == "succeeded"
    assert recorded[:2] == (await fingerprints(ctx, forked.id))[:2]
    assert len(live.asked) == (await task_row(ctx.sessions, forked.id)).llm_calls - 2, \
        "a call before the node was paid"
