"""Webhooks over the API: a task's own webhook (secret once), a tenant's endpoints, the URL
policy (loopback refused unless the operator allows it) and the delivery log."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from fastapi import FastAPI

from adapt.settings import Settings
from adapt.store import webhooks as store
from tests.api.apiutil import sessions_of
from tests.support.api import make_settings

TASK = {"environment": "textcraft", "environment_config": {"seed": 3}}


async def test_loopback_webhook_refused_unless_the_operator_allows_it(
        client: httpx.AsyncClient) -> None:
    for url in ("http://127.0.0.1:9000/hook", "http://10.0.0.5/hook", "http://localhost/h"):
        r = await client.post("/tasks", json={**TASK, "webhook": {"url": url}})
        assert r.status_code == 422, r.text
        assert r.json()["errors"][0]["field"] == "webhook.url"
        assert "ADAPT_WEBHOOK_ALLOWED_NETWORKS" in r.json()["detail"]
    r = await client.post("/webhooks", json={"url": "http://192.168.1.1/x"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "url"
    r = await client.post("/tasks", json={**TASK, "webhook": {"url": "https://h.example/x",
                                                              "events": ["task.started"]}})
    assert r.status_code == 422, r.text


class TestWithLoopbackAllowed:
    """The operator allows 127.0.0.1 (ADAPT_WEBHOOK_ALLOWED_NETWORKS)."""

    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return make_settings(database_url, webhook_allowed_networks=["127.0.0.1/32"])


    async def test_task_webhook_secret_is_shown_once(self, client: httpx.AsyncClient,
                                                     app: FastAPI) -> None:
        hook = {"url": "http://127.0.0.1:9000/hook", "events": ["task.finished", "node.finished"]}
        r = await client.post("/tasks", json={**TASK, "webhook": hook},
                              headers={"Idempotency-Key": "k1"})
        assert r.status_code == 202, r.text
        body = r.json()
        webhook = body["webhook"]
        assert webhook["url"] == hook["url"] and webhook["events"] == hook["events"]
        assert webhook["secret"].startswith("whsec_")
        assert webhook["deliveries"] == f"/tasks/{body['id']}/deliveries"
        detail = (await client.get(f"/tasks/{body['id']}")).json()
        assert detail["webhook"]["id"] == webhook["id"] and detail["webhook"]["secret"] is None
        again = await client.post("/tasks", json={**TASK, "webhook": hook},
                                  headers={"Idempotency-Key": "k1"})
        assert again.status_code == 200 and again.json()["webhook"]["secret"] is None
        plain = (await client.post("/tasks", json=TASK)).json()
        assert plain["webhook"] is None
        # the log: empty until events happen, then one row per delivery
        r = await client.get(f"/tasks/{body['id']}/deliveries")
        assert r.status_code == 200 and r.json() == {"items": [], "next_cursor": None}
        async with sessions_of(app).begin() as session:
            await store.record(session, body["id"], "task.finished", "finished:9",
                               {"task_id": body["id"]},
                               [store.Target(webhook["id"], ("task.finished",))])
        [item] = (await client.get(f"/tasks/{body['id']}/deliveries")).json()["items"]
        assert item["status"] == "pending" and item["attempts"] == 0
        assert item["url"] == hook["url"] and item["payload"]["type"] == "task.finished"
        assert item["id"].startswith("msg_")
        assert (await client.get("/tasks/0000/deliveries")).status_code == 404


    async def test_tenant_endpoints(self, client: httpx.AsyncClient) -> None:
        r = await client.post("/webhooks", json={"url": "http://127.0.0.1:9000/all",
                                                 "description": "ops"})
        assert r.status_code == 201, r.text
        created = r.json()
        assert created["secret"].startswith("whsec_") and created["events"] == ["task.finished"]
        assert r.headers["location"] == f"/webhooks/{created['id']}"
        listed = (await client.get("/webhooks")).json()["items"]
        assert [e["id"] for e in listed] == [created["id"]] and listed[0]["secret"] is None
        # a task's own webhook is not a tenant endpoint
        await client.post("/tasks", json={**TASK, "webhook": {"url": "http://127.0.0.1:1/x"}})
        assert len((await client.get("/webhooks")).json()["items"]) == 1
        assert (await client.delete(f"/webhooks/{created['id']}")).status_code == 204
        assert (await client.get("/webhooks")).json() == {"items": []}
        assert (await client.delete(f"/webhooks/{created['id']}")).status_code == 404
        r = await client.post("/webhooks", json={"url": "http://127.0.0.1:9000/x", "events": []})
        assert r.status_code == 422


@pytest.mark.parametrize(("body", "field"), [
    ({"url": "https://hooks.example.com/a\u0000b"}, "url"),
    ({"url": "https://hooks.example.com/x", "description": "ops\u0000"}, "description"),
    ({"url": "https://hooks.example.com/a\r\nb"}, "url"),
    ({"url": "https://hooks.exa\tmple.com/x"}, "url"),
])
async def test_unstorable_or_control_characters_are_a_422_naming_the_field(
        client: httpx.AsyncClient, body: dict[str, str], field: str) -> None:
    """On SQLite and PostgreSQL alike (PostgreSQL refuses NUL: it was a 503 there)."""
    r = await client.post("/webhooks", content=json.dumps(body),  # ASCII: \ud800 escaped
                          headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert [e["field"] for e in r.json()["errors"]] == [field]
    assert (await client.get("/webhooks")).json() == {"items": []}


class TestWithFewEndpoints:
    """The operator allows 3 endpoints per tenant (ADAPT_WEBHOOK_MAX_ENDPOINTS_PER_TENANT)."""

    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return make_settings(database_url, webhook_max_endpoints_per_tenant=3)

    async def test_endpoints_per_tenant_are_capped(self, client: httpx.AsyncClient) -> None:
        made = [(await client.post("/webhooks", json={"url": f"https://h.example/{i}"})).json()
                for i in range(3)]
        r = await client.post("/webhooks", json={"url": "https://h.example/4"})
        assert r.status_code == 409, r.text
        problem = r.json()
        assert problem["limit"] == 3
        assert "ADAPT_WEBHOOK_MAX_ENDPOINTS_PER_TENANT" in problem["detail"]
        assert len((await client.get("/webhooks")).json()["items"]) == 3
        # a task's own webhook is not one of the tenant's endpoints
        r = await client.post("/tasks", json={**TASK, "webhook": {"url": "https://h.example/t"}})
        assert r.status_code == 202, r.text
        assert (await client.delete(f"/webhooks/{made[0]['id']}")).status_code == 204
        assert (await client.post("/webhooks", json={"url": "https://h.example/5"})
                ).status_code == 201

    async def test_the_cap_holds_under_concurrent_requests(self,
                                                           client: httpx.AsyncClient) -> None:
        replies = await asyncio.gather(*(client.post("/webhooks", json={
            "url": f"https://h.example/{i}"}) for i in range(8)))
        assert sorted(r.status_code for r in replies) == [201] * 3 + [409] * 5, [
            r.text for r in replies if r.status_code not in (201, 409)]
        assert len((await client.get("/webhooks")).json()["items"]) == 3


async def test_the_delivery_log_is_paged(client: httpx.AsyncClient, app: FastAPI) -> None:
    task = (await client.post("/tasks", json=TASK)).json()
    ids = [(await client.post("/webhooks", json={"url": f"https://h.example/{i}"})).json()["id"]
           for i in range(5)]
    async with sessions_of(app).begin() as session:
        await store.record(session, task["id"], "task.finished", "finished:1",
                           {"task_id": task["id"]},
                           [store.Target(i, ("task.finished",)) for i in ids])
    seen: list[str] = []
    url = f"/tasks/{task['id']}/deliveries?limit=2"
    pages = 0
    while True:
        page = (await client.get(url)).json()
        pages += 1
        assert len(page["items"]) <= 2
        seen += [d["id"] for d in page["items"]]
        if page["next_cursor"] is None:
            break
        url = f"/tasks/{task['id']}/deliveries?limit=2&cursor={page['next_cursor']}"
    assert pages == 3 and len(seen) == len(set(seen)) == 5
    whole = (await client.get(f"/tasks/{task['id']}/deliveries")).json()
    assert [d["id"] for d in whole["items"]] == seen and whole["next_cursor"] is None
    r = await client.get(f"/tasks/{task['id']}/deliveries?cursor=nope")
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "cursor"
    assert (await client.get(f"/tasks/{task['id']}/deliveries?limit=101")).status_code == 422
