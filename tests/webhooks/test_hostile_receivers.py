"""Receivers that fight back, as real processes on loopback: an answer of 300 MB, answers
trickled a byte at a time, and one tenant's slow endpoints beside another tenant's. The sender
reads a few KB of an answer, ends every attempt at its deadline, never lets a claim expire
under an attempt, and shares its slots between tenants. Real SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.service.webhooks import WebhookSender
from adapt.store import webhooks as store
from adapt.store.models import Task, WebhookDelivery, utcnow
from tests.service.helpers import insert_task
from tests.support.webhook_receiver import Receiver
from tests.webhooks.test_webhooks_service import deliveries, make_ctx

MiB = 1024 * 1024


async def finished_task(sessions: async_sessionmaker[AsyncSession], urls: list[str], *,
                        tenant: str = "default") -> str:
    """A finished task of ``tenant`` with a ``task.finished`` delivery due to each URL (each
    a tenant endpoint)."""
    task_id = await insert_task(sessions, tenant=tenant)
    async with sessions.begin() as session:
        await session.execute(update(Task).where(Task.id == task_id).values(
            status="succeeded", finished_at=utcnow()))
        endpoints = [store.new_endpoint(tenant, url, ["task.finished"]) for url in urls]
        session.add_all(endpoints)
        await session.flush()
        await store.record(session, task_id, "task.finished", "finished:1",
                           {"task_id": task_id},
                           [store.Target(e.id, ("task.finished",)) for e in endpoints])
    return task_id


def peak_rss_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) * 1024  # type: ignore[union-attr]


async def attempted(sender: WebhookSender, sessions: async_sessionmaker[AsyncSession],
                    task_id: str, timeout: float) -> tuple[WebhookDelivery, float]:
    """Run ``sender`` until the task's one delivery has had an attempt: the row, and how long
    that took (seconds)."""
    run = asyncio.create_task(sender.run())
    t0 = time.monotonic()
    try:
        while True:
            [row] = await deliveries(sessions, task_id)
            if row.attempts >= 1:
                return row, time.monotonic() - t0
            assert time.monotonic() - t0 < timeout, "the attempt has not ended"
            await asyncio.sleep(0.02)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)


async def ending(rcv: Receiver, timeout: float = 5.0) -> dict[str, Any]:
    """The receiver's note that its answer ended (the client went away)."""
    deadline = time.monotonic() + timeout
    while not rcv.endings():
        assert time.monotonic() < deadline, "the receiver is still answering"
        await asyncio.sleep(0.05)
    [end] = rcv.endings()
    return end


async def test_a_huge_answer_is_not_read(database_url: str,
                                        receiver: Callable[..., Receiver]) -> None:
    rcv = receiver("--huge", "300")
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=10.0)
    try:
        task_id = await finished_task(ctx.sessions, [rcv.url])
        sender = WebhookSender(ctx.settings, ctx.sessions, "w1")
        baseline = peak_rss()
        peak_rss_reset()
        row, took = await attempted(sender, ctx.sessions, task_id, 60)
        grew = peak_rss() - baseline
        end = await ending(rcv)
    finally:
        await ctx.aclose()
    assert row.status == "delivered" and row.last_status_code == 200
    # the socket buffers' worth at most, not 300 MB
    assert end["sent_bytes"] < 16 * MiB, end
    assert grew < 32 * MiB, f"the sending process grew by {grew / MiB:.0f} MiB"
    assert took < 3.0, took


async def test_an_answer_trickled_a_byte_at_a_time_is_cut_at_the_deadline(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    """A receiver sends its status line and headers one byte every 0.3 s: each read is well
    within the timeout, the whole answer never ends. The attempt ends at its deadline."""
    rcv = receiver("--trickle", "0.3")
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=1.5,
                   webhook_retry_seconds=0.01)
    try:
        task_id = await finished_task(ctx.sessions, [rcv.url])
        sender = WebhookSender(ctx.settings, ctx.sessions, "w1")
        row, took = await attempted(sender, ctx.sessions, task_id, 10)
        end = await ending(rcv)
    finally:
        await ctx.aclose()
    assert row.status == "failed" and (row.last_error or "").startswith("Timeout"), row.last_error
    assert took < 2.5, took
    assert row.log[0]["duration_ms"] < 2000
    [got] = rcv.requests()
    assert end["ended"] - got["at"] < 3.0, "the connection stayed open past the deadline"


async def test_a_status_then_a_trickled_body_is_delivered_at_the_deadline(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    """The receiver answered 200 at once and trickles its body: the status is the answer,
    the rest is not waited for past the deadline."""
    rcv = receiver("--trickle-body", "0.3")
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=1.5)
    try:
        task_id = await finished_task(ctx.sessions, [rcv.url])
        sender = WebhookSender(ctx.settings, ctx.sessions, "w1")
        row, took = await attempted(sender, ctx.sessions, task_id, 10)
    finally:
        await ctx.aclose()
    assert row.status == "delivered" and row.last_status_code == 200
    assert took < 2.5, took


async def test_a_claim_outlives_its_attempt_so_no_other_sender_sends_it_again(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    """Two senders share the database; the receiver never finishes its answer. The first
    attempt ends at its deadline (1 s), before its claim (1 s + a 0.5 s margin) expires: the
    other sender never takes the delivery while it may still be being sent."""
    rcv = receiver("--trickle", "0.2")
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=1.0,
                   webhook_backoff_seconds=60.0)
    try:
        task_id = await finished_task(ctx.sessions, [rcv.url])
        senders = [WebhookSender(ctx.settings, ctx.sessions, owner, claim_margin=0.5)
                   for owner in ("w1", "w2")]
        runs = [asyncio.create_task(s.run()) for s in senders]
        await asyncio.sleep(4.0)  # the claim would have expired twice over
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        [row] = await deliveries(ctx.sessions, task_id)
        end = await ending(rcv)
    finally:
        await ctx.aclose()
    [got] = rcv.requests()  # sent once
    assert row.attempts == 1 and (row.last_error or "").startswith("Timeout"), row.last_error
    assert end["ended"] - got["at"] < 1.5 + 0.5, "the attempt outlived its claim"


async def test_one_tenants_slow_endpoints_do_not_delay_another_tenants_webhook(
        database_url: str, receiver: Callable[..., Receiver]) -> None:
    """Tenant A has 20 endpoints whose receiver takes 30 s to answer, all due first; tenant B's
    webhook goes out at once, not after A's attempts time out (8 s)."""
    slow = receiver("--hang", "30")
    fast = receiver()
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=8.0)
    try:
        await finished_task(ctx.sessions, [f"{slow.url}/{i}" for i in range(20)], tenant="a")
        b_task = await finished_task(ctx.sessions, [fast.url], tenant="b")
        sender = WebhookSender(ctx.settings, ctx.sessions, "w1")
        t0 = time.monotonic()
        run = asyncio.create_task(sender.run())
        try:
            while not fast.requests():
                assert time.monotonic() - t0 < 6.0, "tenant b's webhook waited for tenant a's"
                await asyncio.sleep(0.05)
            took = time.monotonic() - t0
        finally:
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
        [row] = await deliveries(ctx.sessions, b_task)
    finally:
        await ctx.aclose()
    assert took < 3.0, took
    assert row.event_type == "task.finished"
    assert len(slow.requests()) <= ctx.settings.webhook_tenant_concurrency



async def test_names_whose_lookup_hangs_do_not_hold_the_default_thread_pool(
        database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user controls their name's DNS and can make lookups hang past the deadline: the
    sender resolves in a pool of its own, so asyncio's default pool (the dispatcher's, the
    telemetry's) stays free while 40 lookups hang."""
    real = socket.getaddrinfo
    hanging: list[str] = []
    release = threading.Event()

    def slow(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not str(host).endswith(".slow-dns.test"):
            return real(host, *args, **kwargs)
        hanging.append(host)
        release.wait(10)
        raise socket.gaierror(socket.EAI_AGAIN, "timed out")

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    ctx = make_ctx(database_url, "w1", webhook_timeout_seconds=0.5, webhook_concurrency=40)
    try:
        for t in range(8):
            await finished_task(ctx.sessions, [f"https://h{t}-{i}.slow-dns.test/x"
                                               for i in range(5)], tenant=f"t{t}")
        sender = WebhookSender(ctx.settings, ctx.sessions, "w1")
        run = asyncio.create_task(sender.run())
        try:
            t0 = time.monotonic()
            while len(hanging) < 40 and time.monotonic() - t0 < 3.0:
                await asyncio.sleep(0.02)  # (not in a thread: the pool under test)
            t0 = time.monotonic()
            await asyncio.wait_for(asyncio.to_thread(time.monotonic), 2.0)
            waited = time.monotonic() - t0
        finally:
            release.set()
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
    finally:
        release.set()
        await ctx.aclose()
    assert len(hanging) == 40, "every lookup started at once, and none ended"
    assert waited < 0.5, waited
