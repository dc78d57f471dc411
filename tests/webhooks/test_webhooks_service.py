"""Webhook deliveries from a running worker to a real receiver process on loopback (allowed in
these tests' settings): signed, retried after 500s, never slowing the task, once per event
across a crash and resume. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.llm.base import ChatModel
from adapt.service.execute import ServiceContext, execute_task
from adapt.sim import from_spec
from adapt.store import webhooks as store
from adapt.store.models import NodeRow, Task, WebhookDelivery, utcnow
from adapt.webhooks import verify
from tests.service.helpers import insert_task
from tests.service.test_execute import SIM, Counting
from tests.service.test_execute import make_ctx as service_ctx
from tests.support.webhook_receiver import Receiver

#: the webhook sender's settings for these tests: the receiver on loopback, short delays
WEBHOOK_SETTINGS: dict[str, object] = {
    "webhook_allowed_networks": ["127.0.0.1/32"], "webhook_backoff_seconds": 0.1,
    "webhook_poll_seconds": 0.05, "webhook_timeout_seconds": 2.0}


def make_ctx(url: str, worker: str, model: ChatModel | None = None,
             **settings: object) -> ServiceContext:
    return service_ctx(url, worker, model, **{**WEBHOOK_SETTINGS, **settings})


async def add_webhook(sessions: async_sessionmaker[AsyncSession], task_id: str, url: str,
                      events: list[str]) -> str:
    async with sessions.begin() as session:
        row = store.new_endpoint("default", url, events, task_id=task_id)
        session.add(row)
        return row.secret


async def deliveries(sessions: async_sessionmaker[AsyncSession],
                     task_id: str) -> list[WebhookDelivery]:
    async with sessions() as session:
        return list(await store.for_task(session, task_id))


async def settled(sessions: async_sessionmaker[AsyncSession], task_id: str,
                  timeout: float = 20.0) -> list[WebhookDelivery]:
    """The task's deliveries once none is pending."""
    deadline = time.monotonic() + timeout
    while True:
        rows = await deliveries(sessions, task_id)
        if rows and all(r.status != "pending" for r in rows):
            return rows
        assert time.monotonic() < deadline, [(r.event_type, r.status, r.last_error)
                                             for r in rows]
        await asyncio.sleep(0.05)


async def final_nodes(sessions: async_sessionmaker[AsyncSession], task_id: str) -> set[int]:
    async with sessions() as session:
        return set((await session.execute(select(NodeRow.id).where(
            NodeRow.task_id == task_id,
            NodeRow.status.in_(("succeeded", "failed", "skipped", "cancelled"))))).scalars())


def check_signed(received: list[dict[str, object]], secret: str) -> None:
    for r in received:
        headers = r["headers"]
        assert isinstance(headers, dict)
        body = str(r["body"]).encode()
        assert verify(secret, headers, body), headers
        assert not verify(secret, headers, body + b" "), "a changed body must not verify"
        assert not verify("whsec_" + "A" * 43 + "=", headers, body)


async def test_deliveries_are_signed_and_logged(database_url: str,
                                                receiver: Callable[..., Receiver]) -> None:
    rcv = receiver()
    ctx = make_ctx(database_url, "w1")
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        secret = await add_webhook(ctx.sessions, task_id, rcv.url,
                                   ["task.finished", "node.finished"])
        assert await execute_task(ctx, task_id) == "succeeded"
        rows = await settled(ctx.sessions, task_id)
        nodes = await final_nodes(ctx.sessions, task_id)
        async with ctx.sessions() as session:
            finished_at = (await session.get(Task, task_id)).finished_at  # type: ignore[union-attr]
    finally:
        await ctx.aclose()
    assert all(r.status == "delivered" and r.attempts == 1 for r in rows)
    assert sorted(r.event_type for r in rows) == (["node.finished"] * len(nodes)
                                                  + ["task.finished"])
    received = rcv.requests()
    assert len(received) == len(rows)
    check_signed(received, secret)
    assert {r["headers"]["webhook-id"] for r in received} == {r.id for r in rows}
    finished = [json.loads(r["body"]) for r in received
                if json.loads(r["body"])["type"] == "task.finished"]
    assert len(finished) == 1
    data = finished[0]["data"]
    assert data["task_id"] == task_id and data["status"] == "succeeded"
    assert data["success"] is True
    node_ids = {json.loads(r["body"])["data"]["node"]["id"] for r in received
                if json.loads(r["body"])["type"] == "node.finished"}
    assert node_ids == nodes
    # the task.finished delivery is sent after the task's final state was stored
    [sent] = [r for r in received if json.loads(r["body"])["type"] == "task.finished"]
    assert finished_at is not None and sent["at"] >= finished_at.timestamp()


async def test_a_failing_receiver_is_retried_with_backoff(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    rcv = receiver("--fail-first", "2")
    ctx = make_ctx(database_url, "w1")
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        secret = await add_webhook(ctx.sessions, task_id, rcv.url, ["task.finished"])
        assert await execute_task(ctx, task_id) == "succeeded"
        [row] = await settled(ctx.sessions, task_id)
    finally:
        await ctx.aclose()
    assert row.status == "delivered" and row.attempts == 3
    assert [a["status_code"] for a in row.log] == [500, 500, 200]
    assert row.last_status_code == 200 and row.last_error is None
    received = rcv.requests()
    assert [r["status"] for r in received] == [500, 500, 200]
    assert {r["headers"]["webhook-id"] for r in received} == {row.id}, "same id on retries"
    check_signed(received, secret)
    gaps = [b["at"] - a["at"] for a, b in itertools.pairwise(received)]
    assert gaps[0] >= 0.09 and gaps[1] >= 0.19, f"backoff 0.1 s, then 0.2 s: {gaps}"


async def test_retries_stop_after_the_retry_window(database_url: str,
                                                    receiver: Callable[..., Receiver]) -> None:
    rcv = receiver("--fail-first", "1000")
    ctx = make_ctx(database_url, "w1", webhook_retry_seconds=0.5)
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        await add_webhook(ctx.sessions, task_id, rcv.url, ["task.finished"])
        assert await execute_task(ctx, task_id) == "succeeded"
        [row] = await settled(ctx.sessions, task_id)
    finally:
        await ctx.aclose()
    assert row.status == "failed" and 2 <= row.attempts <= 4
    assert row.last_error == "HTTP 500"


async def test_a_receiver_that_hangs_does_not_slow_the_task(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=2.0)
    try:
        plain = await insert_task(ctx.sessions, config={"seed": 11})
        t0 = time.monotonic()
        assert await execute_task(ctx, plain) == "succeeded"
        baseline = time.monotonic() - t0

        rcv = receiver("--hang", "30")
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        await add_webhook(ctx.sessions, task_id, rcv.url, ["task.finished", "node.finished"])
        t0 = time.monotonic()
        assert await execute_task(ctx, task_id) == "succeeded"
        with_hook = time.monotonic() - t0
        # a receiver that is not there at all: connection refused
        down = await insert_task(ctx.sessions, config={"seed": 11})
        await add_webhook(ctx.sessions, down, "http://127.0.0.1:9/hooks", ["node.finished"])
        t0 = time.monotonic()
        assert await execute_task(ctx, down) == "succeeded"
        with_down = time.monotonic() - t0
        # the first attempts time out (2 s) or are refused; the hanging receiver's deliveries
        # hold the tenant's send slots meanwhile, so the refused ones may come a turn later
        deadline = time.monotonic() + 20.0
        while True:
            await asyncio.sleep(0.5)
            rows = await deliveries(ctx.sessions, task_id)
            down_rows = await deliveries(ctx.sessions, down)
            tried = any(r.attempts >= 1 for r in rows) and any(r.attempts >= 1
                                                               for r in down_rows)
            if tried or time.monotonic() > deadline:
                break
    finally:
        await ctx.aclose()
    # waiting for the receiver would add 2 s (the request timeout) per finished node, ~10 nodes
    assert with_hook < 2 * baseline + 2.0, (baseline, with_hook)
    assert with_down < 2 * baseline + 2.0, (baseline, with_down)
    assert rows and all(r.status == "pending" for r in rows)
    assert any(r.attempts >= 1 and "Timeout" in (r.last_error or "") for r in rows)
    assert down_rows and any("Connect" in (r.last_error or "") for r in down_rows)


async def test_crash_and_resume_send_each_event_once(database_url: str,
                                                    receiver: Callable[..., Receiver]) -> None:
    rcv = receiver()
    first = Counting(from_spec(SIM), hang_after=9)
    ctx1 = make_ctx(database_url, "w1", first)
    task_id = await insert_task(ctx1.sessions, config={"seed": 11})
    secret = await add_webhook(ctx1.sessions, task_id, rcv.url,
                               ["task.finished", "node.finished"])
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 10)
    await asyncio.sleep(0.5)  # the sender delivers the node events so far
    run1.cancel()  # the worker dies mid-task
    with pytest.raises(asyncio.CancelledError):
        await run1
    await ctx1.aclose()
    before = {r.id for r in await deliveries(ctx1.sessions, task_id)}
    sent_before = len(rcv.requests())
    assert before and sent_before == len(before), "nodes finished before the crash were sent"

    ctx2 = make_ctx(database_url, "w2", Counting(from_spec(SIM)))
    try:
        async with ctx2.sessions.begin() as s:  # the dead worker's lease expires
            await s.execute(update(Task).where(Task.id == task_id)
                            .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
        assert await execute_task(ctx2, task_id) == "succeeded"
        rows = await settled(ctx2.sessions, task_id)
        nodes = await final_nodes(ctx2.sessions, task_id)
    finally:
        await ctx2.aclose()
    assert (await deliveries(ctx2.sessions, task_id))[0].task_id == task_id
    assert before < {r.id for r in rows}
    assert len(rows) == len(nodes) + 1, "one delivery per finished node and one per task"
    received = rcv.requests()
    ids = [r["headers"]["webhook-id"] for r in received]
    assert len(ids) == len(set(ids)) == len(rows), "an event was sent twice after the resume"
    check_signed(received, secret)


async def test_a_task_cancelled_while_queued_or_ended_outside_the_run_is_reported(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    from adapt.service.submit import cancel_task

    rcv = receiver()
    ctx = make_ctx(database_url, "w1")
    try:
        queued = await insert_task(ctx.sessions)
        secret = await add_webhook(ctx.sessions, queued, rcv.url, ["task.finished"])
        async with ctx.sessions() as session:
            task = await session.get(Task, queued)
            assert task is not None
            await cancel_task(session, task)
        broken = await insert_task(ctx.sessions, environment="gone")
        await add_webhook(ctx.sessions, broken, rcv.url, ["task.finished"])
        assert await execute_task(ctx, broken) == "error"  # also starts the sender
        [cancelled] = await settled(ctx.sessions, queued)
        [errored] = await settled(ctx.sessions, broken)
    finally:
        await ctx.aclose()
    assert cancelled.status == errored.status == "delivered"
    assert cancelled.payload["data"]["status"] == "cancelled"
    assert errored.payload["data"]["status"] == "error"
    assert "unknown environment" in errored.payload["data"]["error"]
    received = {r["headers"]["webhook-id"]: r for r in rcv.requests()}
    assert set(received) == {cancelled.id, errored.id}
    check_signed([received[cancelled.id]], secret)


async def test_a_node_finished_delivery_waits_until_the_node_is_stored_ended(
        database_url: str) -> None:
    """The sink records ``node.finished`` as the engine emits it, before the database sink has
    written the node: it is not sent until the node's final state is stored (a receiver that
    calls back sees the node ended), or the task is over."""
    from adapt.engine.events import NodeUpdated
    from adapt.engine.tree import Node
    from adapt.service.webhooks import WebhookSink

    ctx = make_ctx(database_url, "w1")
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        await add_webhook(ctx.sessions, task_id, "https://hooks.example.com/x",
                          ["node.finished"])
        async with ctx.sessions.begin() as session:
            for node_id in (1, 2):
                session.add(NodeRow(task_id=task_id, id=node_id, position=0, depth=1,
                                    kind="task", goal="g", status="running", steps_count=0,
                                    usage={}, updated_at=utcnow()))
        sink = WebhookSink(ctx.sessions, task_id,
                           await store.targets(ctx.sessions, task_id, "default"))
        await sink.emit(NodeUpdated(node=Node(id=1, goal="g", status="succeeded")))

        async def claim() -> list[store.Claimed]:
            return await store.claim_due(ctx.sessions, "w1", limit=10, hold_seconds=30)

        assert await claim() == [], "sent while the stored node is still running"
        async with ctx.sessions.begin() as session:
            await session.execute(update(NodeRow).where(
                NodeRow.task_id == task_id, NodeRow.id == 1).values(status="succeeded"))
        [claimed] = await claim()
        assert claimed.body["data"]["node"]["id"] == 1

        await sink.emit(NodeUpdated(node=Node(id=2, goal="g", status="failed")))
        assert await claim() == []
        async with ctx.sessions.begin() as session:  # the task ended without storing node 2
            await session.execute(update(Task).where(Task.id == task_id).values(
                status="error", finished_at=utcnow()))
        [claimed] = await claim()
        assert claimed.body["data"]["node"]["id"] == 2
    finally:
        await ctx.aclose()


async def test_node_finished_deliveries_stop_at_the_tasks_limit(database_url: str) -> None:
    """Three endpoints, at most 5 node.finished deliveries per task: the first node's event is
    recorded for all three; the second would pass the limit and is recorded once per endpoint
    as failed, saying why; later ones are not recorded; task.finished always is. A resumed
    attempt that replays the same events changes nothing."""
    from adapt.engine.events import NodeUpdated, TaskFinished
    from adapt.engine.tree import Node, TaskResult
    from adapt.service.webhooks import WebhookSink

    ctx = make_ctx(database_url, "w1")
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        for i in range(3):
            await add_webhook(ctx.sessions, task_id, f"https://hooks.example.com/{i}",
                              ["task.finished", "node.finished"])
        targets = await store.targets(ctx.sessions, task_id, "default")
        events = [NodeUpdated(node=Node(id=n, goal="g", status="succeeded")) for n in (1, 2, 3)]
        events.append(TaskFinished(result=TaskResult(status="succeeded", success=True, goal="g",
                                                     strategy="adapt", d_max=3)))
        for _attempt in range(2):  # the run, then a resume replaying it
            sink = WebhookSink(ctx.sessions, task_id, targets, max_node_deliveries=5)
            for event in events:
                await sink.emit(event)
            rows = await deliveries(ctx.sessions, task_id)
            by_node: dict[str, list[str]] = {}
            for r in rows:
                by_node.setdefault(r.event_key, []).append(r.status)
            assert by_node == {"node:1": ["pending"] * 3, "node:2": ["failed"] * 3,
                               "finished:4": ["pending"] * 3}, by_node
        [why] = {r.last_error for r in rows if r.event_key == "node:2"}
        assert "ADAPT_WEBHOOK_MAX_DELIVERIES_PER_TASK = 5" in (why or "")
        assert "later node.finished events of this task are not recorded" in (why or "")
        claimed = await store.claim_due(ctx.sessions, "w1", limit=20, hold_seconds=30)
        async with ctx.sessions.begin() as session:  # the task is over: everything due is sent
            await session.execute(update(Task).where(Task.id == task_id).values(
                status="succeeded", finished_at=utcnow()))
        claimed += await store.claim_due(ctx.sessions, "w1", limit=20, hold_seconds=30)
        assert sorted(c.body["type"] for c in claimed) == ["node.finished"] * 3 + [
            "task.finished"] * 3, "the failed rows are never sent"
    finally:
        await ctx.aclose()
