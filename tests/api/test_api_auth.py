"""API keys: open while none exist, required once one does, tenant isolation (404), revocation,
and the exposure rules of ``serve``."""

from __future__ import annotations

import asyncio
import logging
import re

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from adapt.errors import UserError
from adapt.service import auth
from adapt.store.models import ApiKey, Task
from api.deps import KeysCache
from api.serve import check_exposure, is_loopback_host
from tests.api.apiutil import count_rows, create, sessions_of
from tests.support.api import make_settings


async def new_key(app: FastAPI, tenant: str, name: str | None = None) -> str:
    async with sessions_of(app)() as session:
        return await auth.create_key(session, tenant, name)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_open_without_keys_as_tenant_default(client: httpx.AsyncClient,
                                                  app: FastAPI) -> None:
    task = await create(client)
    assert (await client.get(f"/tasks/{task['id']}")).status_code == 200
    async with sessions_of(app)() as session:
        row = await session.get(Task, task["id"])
        assert row is not None and row.tenant == "default"
        assert await auth.any_keys(session) is False


async def test_keys_are_stored_hashed_and_resolve_to_their_tenant(app: FastAPI) -> None:
    key = await new_key(app, "acme", "ci")
    match = re.fullmatch(r"adapt_([0-9a-f]{8})_([A-Za-z0-9_-]+)", key)
    assert match is not None
    prefix, secret = match.groups()
    async with sessions_of(app)() as session:
        row = (await session.execute(select(ApiKey))).scalar_one()
        assert row.prefix == prefix and row.tenant == "acme" and row.name == "ci"
        assert row.key_hash == auth.hash_secret(secret) and secret not in row.key_hash
        assert await auth.tenant_for(session, key) == "acme"
        for bad in ("", "adapt_", key + "x", key.replace(prefix, "00000000"), "Bearer " + key,
                    f"adapt_{prefix}_short"):
            assert await auth.tenant_for(session, bad) is None
        assert await auth.any_keys(session) is True
        listed = await auth.list_keys(session)
        assert [(k.prefix, k.tenant) for k in listed] == [(prefix, "acme")]


async def test_invalid_tenant_names_are_refused(app: FastAPI) -> None:
    for tenant in ("", "a b", "x" * 200, "-lead"):
        with pytest.raises(UserError):
            await new_key(app, tenant)


async def test_once_a_key_exists_every_route_but_probes_needs_one(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)  # created while open
    key = await new_key(app, "acme")
    await asyncio.sleep(1.1)  # the any-keys cache expires within a second
    for method, url in (("GET", "/tasks"), ("POST", "/tasks"), ("GET", f"/tasks/{task['id']}"),
                        ("GET", f"/tasks/{task['id']}/tree"), ("GET", "/environments"),
                        ("GET", f"/tasks/{task['id']}/events?since=0"),
                        ("POST", f"/tasks/{task['id']}/cancel")):
        response = await client.request(method, url, json={} if method == "POST" else None)
        assert response.status_code == 401, (url, response.text)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.headers["content-type"] == "application/problem+json"
        assert "adapt keys create" in response.json()["detail"]
    for url in ("/healthz", "/readyz"):
        assert (await client.get(url)).status_code == 200, url
    # /metrics shows every tenant: a tenant's key does not open it (ADAPT_METRICS_TOKEN does)
    assert (await client.get("/metrics")).status_code == 401

    wrong = await client.get("/tasks", headers=bearer(key[:-2] + "zz"))
    assert wrong.status_code == 401 and "invalid_token" in wrong.headers["www-authenticate"]
    basic = await client.get("/tasks", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert basic.status_code == 401 and "malformed" in basic.json()["detail"]

    ok = await client.get("/tasks", headers=bearer(key))
    assert ok.status_code == 200
    assert ok.json()["items"] == []  # the task of tenant "default" is not acme's
    assert (await client.get(f"/tasks/{task['id']}", headers=bearer(key))).status_code == 404


async def test_a_presented_key_must_be_valid_even_while_open(client: httpx.AsyncClient) -> None:
    response = await client.get("/tasks", headers=bearer("adapt_deadbeef_" + "x" * 43))
    assert response.status_code == 401


async def test_tenants_see_only_their_own_tasks(client: httpx.AsyncClient, app: FastAPI) -> None:
    app.state.keys_cache = KeysCache(ttl=0)
    alice, bob = await new_key(app, "alice"), await new_key(app, "bob")
    mine = await create(client, headers=bearer(alice))
    theirs = await create(client, headers=bearer(bob))
    tid = mine["id"]
    for method, path in (("GET", ""), ("GET", "/tree"), ("GET", "/nodes/1"),
                         ("GET", "/events?since=0"), ("GET", "/events"), ("POST", "/cancel")):
        response = await client.request(method, f"/tasks/{tid}{path}", headers=bearer(bob))
        assert response.status_code == 404, (path, response.text)
    assert (await client.get(f"/tasks/{tid}", headers=bearer(alice))).status_code == 200
    listed = (await client.get("/tasks", headers=bearer(bob))).json()["items"]
    assert [t["id"] for t in listed] == [theirs["id"]]
    # the cancel by bob did nothing
    assert (await client.get(f"/tasks/{tid}", headers=bearer(alice))).json()["status"] == "queued"

    # idempotency keys are per tenant
    body = {"environment": "textcraft", "environment_config": {"seed": 9}}
    a = await client.post("/tasks", json=body, headers={**bearer(alice), "Idempotency-Key": "k"})
    b = await client.post("/tasks", json=body, headers={**bearer(bob), "Idempotency-Key": "k"})
    assert a.status_code == b.status_code == 202 and a.json()["id"] != b.json()["id"]


async def test_revoked_keys_stop_working(client: httpx.AsyncClient, app: FastAPI) -> None:
    app.state.keys_cache = KeysCache(ttl=0)
    keep, drop = await new_key(app, "acme"), await new_key(app, "acme")
    prefix = drop.split("_")[1]
    async with sessions_of(app)() as session:
        assert await auth.revoke_key(session, prefix) is True
        assert await auth.revoke_key(session, prefix) is False
        assert await auth.revoke_key(session, "ffffffff") is False
    assert (await client.get("/tasks", headers=bearer(drop))).status_code == 401
    assert (await client.get("/tasks", headers=bearer(keep))).status_code == 200
    async with sessions_of(app)() as session:
        assert await auth.revoke_key(session, keep) is True  # the whole key works too
    # no active key left: still closed (authentication never reopens by itself)
    assert (await client.get("/tasks")).status_code == 401
    assert (await client.get("/tasks", headers=bearer(keep))).status_code == 401
    assert await count_rows(app, ApiKey) == 2


# -- serve: exposure rules ------------------------------------------------------------------
def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3", "api.localhost"):
        assert is_loopback_host(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com", ""):
        assert not is_loopback_host(host), host


def test_serve_refuses_a_public_bind_without_keys(caplog: pytest.LogCaptureFixture) -> None:
    settings = make_settings("sqlite:///unused.db")
    with pytest.raises(UserError, match="adapt keys create"):
        check_exposure(settings, "0.0.0.0", has_keys=False)
    check_exposure(settings, "0.0.0.0", has_keys=True)
    allowed = make_settings("sqlite:///unused.db", allow_public_without_keys=True)
    with caplog.at_level(logging.WARNING, logger="api.serve"):
        check_exposure(allowed, "0.0.0.0", has_keys=False)
        check_exposure(settings, "127.0.0.1", has_keys=False)
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("NO API KEYS" in m for m in messages)
    assert any("anyone on this machine" in m for m in messages)
