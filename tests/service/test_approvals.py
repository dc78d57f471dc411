"""Plan approvals in the service: a task that asks for approval waits with no lease and no
worker, a decision queues it again, and the next attempt (on any worker) replays every
recorded call (none is paid again) and goes on from the decision. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from adapt.engine import RunConfig
from adapt.engine.approvals import DecisionKind
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse
from adapt.llm.recording import request_fingerprint
from adapt.service import approvals as approval_service
from adapt.service.errors import NotDecidable
from adapt.service.execute import ServiceContext, execute_task
from adapt.service.submit import cancel_task
from adapt.service.sweeper import sweep_once
from adapt.sim import from_spec
from adapt.store import webhooks as webhook_store
from adapt.store.models import ApprovalRow, LLMCallRow, NodeRow, Task, WebhookDelivery, utcnow
from adapt.store.prompts import call_prompts
from tests.service.helpers import events, insert_task, persisted_tree, task_row
from tests.service.test_execute import SIM, as_persisted, make_ctx, reference_tree

PLANS = RunConfig(d_max=4, approval={"plans": True})


class PaidOnce:
    """Wraps a model; counts live calls and records every request it was asked; a request
    asked twice (paid again) is kept in ``repeats`` (shared across workers)."""

    def __init__(self, inner: ChatModel, seen: dict[str, int]) -> None:
        self.inner, self.seen = inner, seen
        self.name, self.simulated = inner.name, inner.simulated
        self.calls = 0
        self.repeats: list[str] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        key = request_fingerprint(request)
        if key in self.seen:
            self.repeats.append(request.as_prompt()[-200:])
        self.seen[key] = self.seen.get(key, 0) + 1
        return await self.inner.complete(request)


async def pending(ctx: ServiceContext, task_id: str) -> list[ApprovalRow]:
    async with ctx.sessions() as s:
        return list((await s.execute(select(ApprovalRow).where(
            ApprovalRow.task_id == task_id, ApprovalRow.status == "pending")
            .order_by(ApprovalRow.requested_at))).scalars())


async def decide(ctx: ServiceContext, task_id: str, row: ApprovalRow, decision: DecisionKind,
                 **kw: Any) -> bool:
    async with ctx.sessions() as s:
        task = await s.get(Task, task_id)
        assert task is not None
        _, woken = await approval_service.decide(
            s, task, row.id, decision, reason=kw.get("reason"), proposal=kw.get("proposal"),
            decided_by="key-1", tenant="default")
    return woken


async def test_plans_wait_without_a_worker_and_resume_paying_nothing_twice(
    database_url: str,
) -> None:
    seen: dict[str, int] = {}
    first = PaidOnce(from_spec(SIM), seen)
    ctx = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, run_config=PLANS)
    try:
        assert await execute_task(ctx, task_id) == "waiting"
    finally:
        await ctx.aclose()
    task = await task_row(ctx.sessions, task_id)
    assert task.status == "waiting" and task.lease_owner is None
    assert task.lease_expires_at is None and not ctx.running
    (row,) = await pending(ctx, task_id)
    assert row.node_id == 1 and row.kind == "plan" and row.number == 1
    assert row.proposal["steps"] and row.proposal["execution_order"].startswith("(Step 1")
    tree = await persisted_tree(ctx.sessions, task_id)
    assert tree["nodes"][1]["status"] == "awaiting_approval"
    waiting = await task_row(ctx.sessions, task_id)
    assert waiting.goal is None and waiting.resolved_goal == tree["nodes"][1]["goal"], \
        "a waiting task says what it does (the goal the environment chose)"
    assert set(tree["nodes"]) == {1}, "nothing of the plan ran before the decision"
    evs = await events(ctx.sessions, task_id)
    assert evs[-1].type == "approval.requested" and evs[-1].data["approval_id"] == row.id
    paid_before = first.calls

    # each decision queues the task again; each attempt runs on a fresh worker
    workers = [first]
    decisions = 0
    while (await task_row(ctx.sessions, task_id)).status == "waiting":
        (row,) = await pending(ctx, task_id)
        assert await decide(ctx, task_id, row, "approve")
        decisions += 1
        assert (await task_row(ctx.sessions, task_id)).status == "queued"
        model = PaidOnce(from_spec(SIM), seen)
        workers.append(model)
        ctx = make_ctx(database_url, f"w{len(workers)}", model)
        try:
            assert await execute_task(ctx, task_id) in ("waiting", "succeeded")
        finally:
            await ctx.aclose()
    assert decisions == 2, "seed 11 plans twice (the root and one sub-task)"
    task = await task_row(ctx.sessions, task_id)
    assert task.status == "succeeded" and task.llm_calls == 15
    assert sum(w.calls for w in workers) == 15, "calls were paid again after a decision"
    assert all(not w.repeats for w in workers), [w.repeats for w in workers]
    assert workers[1].calls > 0 and paid_before < 15
    # approving every plan yields the tree of a run that asked nobody
    expected = as_persisted(await reference_tree({"seed": 11}, RunConfig(d_max=4)))
    got = await persisted_tree(ctx.sessions, task_id)
    assert got == expected
    types = [e.type for e in await events(ctx.sessions, task_id)]
    assert types.count("approval.requested") == types.count("approval.decided") == 2
    assert types.count("task.resumed") == 2 and types[-1] == "task.finished"
    seqs = [e.seq for e in await events(ctx.sessions, task_id)]
    assert seqs == list(range(1, len(seqs) + 1))


async def run_until_waiting(database_url: str, task_id: str, worker: str) -> PaidOnce:
    model = PaidOnce(from_spec(SIM), {})
    ctx = make_ctx(database_url, worker, model)
    try:
        await execute_task(ctx, task_id)
    finally:
        await ctx.aclose()
    return model


async def test_an_edited_plan_runs_instead_of_the_planners(database_url: str) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11},
                                run_config=RunConfig(d_max=2, approval={"plans": True}))
    await run_until_waiting(database_url, task_id, "w1")
    (row,) = await pending(ctx, task_id)
    steps = list(row.proposal["steps"])
    edited = {"steps": [*steps[:1], "  fetch   1 quartz "],
              "execution_order": "Step 1 OR Step 2"}
    assert await decide(ctx, task_id, row, "edit", proposal=edited)
    async with ctx.sessions() as s:
        decided = await s.get(ApprovalRow, row.id)
        assert decided is not None and decided.status == "edited"
        assert decided.edited == {"steps": [steps[0], "fetch 1 quartz"],
                                  "execution_order": "(Step 1 OR Step 2)"}
        assert decided.changes is not None and set(decided.changes) <= {
            "steps", "execution_order"}
        assert decided.decided_by == "key-1" and decided.decided_at is not None
    second = await run_until_waiting(database_url, task_id, "w2")
    task = await task_row(ctx.sessions, task_id)
    assert task.status in ("succeeded", "failed"), task.status
    tree = await persisted_tree(ctx.sessions, task_id)
    root = tree["nodes"][1]
    assert root["plan"]["steps"] == [steps[0], "fetch 1 quartz"]
    assert root["plan"]["warnings"] == ["edited by a person"]
    assert root["logic"] == "or"
    kids = sorted((n for n in tree["nodes"].values() if n["parent_id"] == 1),
                  key=lambda n: n["position"])
    assert [k["goal"] for k in kids] == [steps[0], "fetch 1 quartz"]
    assert second.calls > 0 and not second.repeats


async def test_a_rejected_plan_is_planned_again_with_the_reason(database_url: str) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11},
                                run_config=RunConfig(d_max=2, approval={"plans": True}))
    first = await run_until_waiting(database_url, task_id, "w1")
    (row,) = await pending(ctx, task_id)
    assert await decide(ctx, task_id, row, "reject", reason="use fewer steps, please")
    second = await run_until_waiting(database_url, task_id, "w2")
    assert (await task_row(ctx.sessions, task_id)).status == "waiting"
    (again,) = await pending(ctx, task_id)
    assert (again.node_id, again.kind, again.number) == (1, "plan", 2)
    assert second.calls == 1 and not second.repeats, "only the new plan is paid for"
    async with ctx.sessions() as s:
        planner = (await s.execute(select(LLMCallRow).where(
            LLMCallRow.task_id == task_id, LLMCallRow.role == "planner")
            .order_by(LLMCallRow.id))).scalars().all()
        rejected = await s.get(ApprovalRow, row.id)
    assert len(planner) == 2
    assert rejected is not None and rejected.status == "rejected"
    assert rejected.changes == {"reason": "use fewer steps, please"}
    async with ctx.sessions() as s:
        prompts = await call_prompts(s, task_id, [c.id for c in planner])
    text = str(prompts)
    assert "rejected your previous plan: use fewer steps, please" in text
    assert first.calls > 0


async def test_cancel_while_waiting_ends_the_task_and_its_waiting_node(
    database_url: str,
) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, run_config=PLANS)
    await run_until_waiting(database_url, task_id, "w1")
    async with ctx.sessions() as s:
        task = await s.get(Task, task_id)
        assert task is not None
        await cancel_task(s, task)
        assert task.status == "cancelled"
        node = await s.get(NodeRow, (task_id, 1))
        assert node is not None and node.status == "cancelled"
    assert await pending(ctx, task_id) == []  # nobody decides it now: withdrawn
    async with ctx.sessions() as s:
        (row,) = (await s.execute(select(ApprovalRow).where(
            ApprovalRow.task_id == task_id))).scalars().all()
    assert row.status == "withdrawn" and row.changes == {"task": "cancelled"}
    assert row.decided_at is not None and row.decided_by is None
    with pytest.raises(NotDecidable):
        await decide(ctx, task_id, row, "approve")


async def test_a_rejected_action_resumes_paying_nothing_twice(database_url: str) -> None:
    seen: dict[str, int] = {}
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11},
                                run_config=RunConfig(d_max=4, approval={"actions": ["craft"]}))
    workers: list[PaidOnce] = []
    decisions = 0
    while True:
        model = PaidOnce(from_spec(SIM), seen)
        workers.append(model)
        ctx = make_ctx(database_url, f"w{len(workers)}", model)
        try:
            status = await execute_task(ctx, task_id)
        finally:
            await ctx.aclose()
        if status != "waiting":
            break
        (row,) = await pending(ctx, task_id)
        assert row.kind == "action" and row.proposal["name"] == "craft"
        reject = decisions == 0
        assert await decide(ctx, task_id, row, "reject" if reject else "approve",
                            reason="not yet" if reject else None)
        decisions += 1
    assert status in ("succeeded", "failed")
    assert all(not w.repeats for w in workers), [w.repeats for w in workers]
    task = await task_row(ctx.sessions, task_id)
    assert sum(w.calls for w in workers) == task.llm_calls, "a call was paid twice"
    tree = await persisted_tree(ctx.sessions, task_id)
    observations = [s["observation"] for ss in tree["steps"].values() for s in ss]
    assert ("A person rejected your previous action: not yet. Propose a different one."
            in observations)


async def test_a_worker_killed_on_the_way_to_waiting_changes_nothing(
    database_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker dies after the run stopped at the plan and before the task was set waiting
    (its lease stays): the next worker replays, stops at the same point, stores the request
    once, and pays no call again."""
    seen: dict[str, int] = {}
    first = PaidOnce(from_spec(SIM), seen)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11}, run_config=PLANS)
    reached = asyncio.Event()
    real_wait = approval_service.wait

    async def dies(*args: Any, **kwargs: Any) -> str | None:
        reached.set()
        await asyncio.Event().wait()  # never returns: the process is gone
        return None

    monkeypatch.setattr(approval_service, "wait", dies)
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(reached.wait(), 30)
    run1.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run1
    await ctx1.aclose()
    monkeypatch.setattr(approval_service, "wait", real_wait)
    assert (await task_row(ctx1.sessions, task_id)).status == "running"
    assert await pending(ctx1, task_id) == []
    async with ctx1.sessions.begin() as s:  # the dead worker's lease expires
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))

    second = PaidOnce(from_spec(SIM), seen)
    ctx2 = make_ctx(database_url, "w2", second)
    try:
        assert await execute_task(ctx2, task_id) == "waiting"
    finally:
        await ctx2.aclose()
    assert second.calls == 0, "the replay paid a call again"
    (row,) = await pending(ctx2, task_id)
    assert await decide(ctx2, task_id, row, "approve")
    workers = [first, second]
    while (await task_row(ctx2.sessions, task_id)).status in ("queued", "waiting"):
        for row in await pending(ctx2, task_id):
            await decide(ctx2, task_id, row, "approve")
        model = PaidOnce(from_spec(SIM), seen)
        workers.append(model)
        ctx3 = make_ctx(database_url, f"w{len(workers)}", model)
        try:
            await execute_task(ctx3, task_id)
        finally:
            await ctx3.aclose()
    task = await task_row(ctx2.sessions, task_id)
    assert task.status == "succeeded" and sum(w.calls for w in workers) == 15
    assert all(not w.repeats for w in workers)
    async with ctx2.sessions() as s:
        rows = (await s.execute(select(ApprovalRow).where(ApprovalRow.task_id == task_id))
                ).scalars().all()
    assert len(rows) == 2 and {r.status for r in rows} == {"approved"}


async def overdue_now(ctx: ServiceContext, task_id: str) -> None:
    async with ctx.sessions.begin() as s:
        await s.execute(update(ApprovalRow).where(ApprovalRow.task_id == task_id)
                        .values(deadline_at=utcnow() - timedelta(seconds=1)))


async def test_a_deadline_rejects_what_nobody_answered(database_url: str) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    rc = RunConfig(d_max=2, approval={"plans": True, "timeout_seconds": 3600})
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, run_config=rc)
    await run_until_waiting(database_url, task_id, "w1")
    (row,) = await pending(ctx, task_id)
    assert row.deadline_at is not None
    dispatched: list[str] = []

    async def dispatch(task_id: str) -> None:
        dispatched.append(task_id)

    assert await sweep_once(ctx.sessions, dispatch, grace=60) == []  # not due yet
    await overdue_now(ctx, task_id)
    assert await sweep_once(ctx.sessions, dispatch, grace=60) == [task_id]
    assert dispatched == [task_id]
    async with ctx.sessions() as s:
        decided = await s.get(ApprovalRow, row.id)
    assert decided is not None and decided.status == "rejected"
    assert decided.decided_by == "deadline"
    assert decided.reason == "nobody decided before the deadline (3600 s)"
    assert (await task_row(ctx.sessions, task_id)).status == "queued"
    second = await run_until_waiting(database_url, task_id, "w2")
    (again,) = await pending(ctx, task_id)
    assert again.number == 2 and second.calls == 1 and not second.repeats


async def test_a_deadline_can_fail_the_task(database_url: str) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    rc = RunConfig(d_max=2, approval={"plans": True, "timeout_seconds": 60,
                                      "on_timeout": "fail"})
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, run_config=rc)
    await run_until_waiting(database_url, task_id, "w1")
    (row,) = await pending(ctx, task_id)
    await overdue_now(ctx, task_id)

    async def dispatch(task_id: str) -> None:
        raise AssertionError("a failed task is not dispatched")

    assert await sweep_once(ctx.sessions, dispatch, grace=60) == []
    task = await task_row(ctx.sessions, task_id)
    assert task.status == "failed" and task.finished_at is not None
    assert task.error == f"approval {row.id} had no decision before the deadline (60 s)"
    tree = await persisted_tree(ctx.sessions, task_id)
    assert tree["nodes"][1]["status"] == "failed"
    async with ctx.sessions() as s:
        expired = await s.get(ApprovalRow, row.id)
    assert expired is not None and expired.status == "expired"
    assert (await events(ctx.sessions, task_id))[-1].type == "task.finished"
    assert await pending(ctx, task_id) == []


async def test_an_approval_request_is_a_webhook_event(database_url: str) -> None:
    ctx = make_ctx(database_url, "w0")
    await ctx.aclose()
    async with ctx.sessions.begin() as s:
        s.add(webhook_store.new_endpoint("default", "https://hooks.example.com/a",
                                         ["approval.requested"]))
        s.add(webhook_store.new_endpoint("default", "https://hooks.example.com/b",
                                         ["task.finished"]))
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, run_config=PLANS)
    await run_until_waiting(database_url, task_id, "w1")
    await run_until_waiting(database_url, task_id, "w2")  # a second worker: nothing new
    (row,) = await pending(ctx, task_id)
    async with ctx.sessions() as s:
        deliveries = (await s.execute(select(WebhookDelivery).where(
            WebhookDelivery.task_id == task_id))).scalars().all()
    assert [d.event_type for d in deliveries] == ["approval.requested"]
    data = deliveries[0].payload["data"]
    assert data["approval_id"] == row.id and data["kind"] == "plan" and data["node_id"] == 1
    assert data["proposal"] == row.proposal
    assert data["url"] == f"/tasks/{task_id}/approvals/{row.id}"
