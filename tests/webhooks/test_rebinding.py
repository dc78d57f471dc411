"""DNS rebinding: a webhook is sent to the address that was checked, not to whatever the name
resolves to a moment later.

The allow-list (``ADAPT_WEBHOOK_ALLOWED_NETWORKS``) is the operator's setting; a user chooses
only the URL, so the most a user controls is what the URL's host name resolves to. These tests
allow 127.0.0.1/32 only (the receiver's address); 127.0.0.2 stands for a forbidden internal
service and runs a second real receiver on the same port. A user whose name answers the allowed
address when checked and the forbidden one when asked again must not reach the latter: a user
cannot widen the operator's allow-list.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from adapt.service.execute import execute_task
from tests.service.helpers import insert_task
from tests.support.webhook_receiver import Receiver
from tests.webhooks.test_webhooks_service import add_webhook, make_ctx, settled

NAME = "hooks.rebinding.test"


def rebinding_resolver(monkeypatch: pytest.MonkeyPatch, answers: list[str]) -> list[str]:
    """Make ``NAME`` resolve to ``answers[0]`` first and ``answers[1]`` on every later lookup
    (for every caller in this process: the policy's check and any lookup httpx would make).
    Returns the log of answers given."""
    real = socket.getaddrinfo
    given: list[str] = []

    def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (host.decode() if isinstance(host, bytes) else host) != NAME:  # anyio passes bytes
            return real(host, port, *args, **kwargs)
        address = answers[min(len(given), 1)]
        given.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 80)))]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return given


async def deliver_to_rebinding_name(
        database_url: str, receiver: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch,
        answers: list[str], **settings: Any) -> tuple[Receiver, Receiver, list[str], Any, int | None]:
    """Run a task whose webhook names ``NAME`` (resolving as ``answers``), with a receiver on
    the allowed 127.0.0.1 and one on the forbidden 127.0.0.2, same port. Returns (allowed,
    forbidden, the resolver's answers, the delivery row, the port)."""
    allowed = receiver()
    port = urlsplit(allowed.url).port
    forbidden = receiver("--host", "127.0.0.2", "--port", str(port))
    given = rebinding_resolver(monkeypatch, answers)
    ctx = make_ctx(database_url, "w1", **settings)  # allows 127.0.0.1/32 only
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": 11})
        await add_webhook(ctx.sessions, task_id, f"http://{NAME}:{port}/hooks",
                          ["task.finished"])
        assert await execute_task(ctx, task_id) == "succeeded"
        [row] = await settled(ctx.sessions, task_id)
    finally:
        await ctx.aclose()
    return allowed, forbidden, given, row, port


async def test_a_name_that_rebinds_after_the_check_reaches_only_the_checked_address(
        database_url: str, receiver: Callable[..., Receiver],
        monkeypatch: pytest.MonkeyPatch) -> None:
    allowed, forbidden, given, row, port = await deliver_to_rebinding_name(
        database_url, receiver, monkeypatch, ["127.0.0.1", "127.0.0.2"])
    assert forbidden.requests() == [], "the forbidden address was reached"
    assert given == ["127.0.0.1"], "resolved once, for the check"
    assert row.status == "delivered" and row.attempts == 1
    [got] = allowed.requests()
    assert got["headers"]["host"] == f"{NAME}:{port}"


async def test_a_name_that_resolves_to_a_forbidden_address_is_never_sent_to(
        database_url: str, receiver: Callable[..., Receiver],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The delivery log (the tenant's) gives a generic refusal; what the name resolved to is in
    the server log only."""
    caplog.set_level(logging.INFO, logger="adapt.service.webhooks")
    allowed, forbidden, _, row, _ = await deliver_to_rebinding_name(
        database_url, receiver, monkeypatch, ["127.0.0.2", "127.0.0.1"],
        webhook_retry_seconds=0.01)
    assert row.status == "failed"
    assert "resolves to an address that is not public" in (row.last_error or "")
    shown = json.dumps([row.last_error, row.log])
    assert "127.0.0.2" not in shown and "loopback" not in shown, shown
    assert f"{NAME} resolves to 127.0.0.2 (loopback)" in caplog.text
    assert forbidden.requests() == [] and allowed.requests() == []
