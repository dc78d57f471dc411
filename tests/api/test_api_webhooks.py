"""Webhooks over the API: a task's own webhook (secret once), a tenant's endpoints, the URL
policy (loopback refused unless the operator allows it) and the delivery log."""

from __future__ import annotations

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
        assert r.status_code == 200 and r.json() == {"items": []}
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
