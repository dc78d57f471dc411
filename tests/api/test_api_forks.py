"""``POST /tasks/{id}/fork`` over HTTP: 202 with the new task and its ``forked_from``, a real
worker runs both, another tenant's task is a 404, an unfinished one a 409, a bad node or
override a 422 naming the field."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from adapt.service import auth
from adapt.settings import Settings
from tests.api.apiutil import create, sessions_of
from tests.api.test_api_approvals import work
from tests.support.api import FakeDispatcher

BODY = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4}


async def key(app: FastAPI, tenant: str) -> dict[str, str]:
    async with sessions_of(app)() as session:
        return {"Authorization": f"Bearer {await auth.create_key(session, tenant, None)}"}


async def test_fork_over_http(client: httpx.AsyncClient, app: FastAPI, settings: Settings,
                              dispatcher: FakeDispatcher) -> None:
    alice, bob = await key(app, "alice"), await key(app, "bob")
    task = await create(client, BODY, headers=alice)
    busy = await client.post(f"/tasks/{task['id']}/fork", json={"node_id": 1}, headers=alice)
    assert busy.status_code == 409, busy.text
    assert await work(settings, task["id"]) == "succeeded"
    dispatcher.dispatched.clear()
    r = await client.post(f"/tasks/{task['id']}/fork", json={"node_id": 2}, headers=alice)
    assert r.status_code == 202, r.text
    forked = r.json()
    assert forked["forked_from"] == {"task_id": task["id"], "node_id": 2}
    assert r.headers["location"] == f"/tasks/{forked['id']}"
    assert dispatcher.dispatched == [forked["id"]] and forked["status"] == "queued"
    assert (await client.get(f"/tasks/{task['id']}", headers=alice)).json()[
        "forked_from"] is None
    assert await work(settings, forked["id"]) == "succeeded"
    mine = (await client.get(f"/tasks/{forked['id']}/tree", headers=alice)).json()["tree"]
    theirs = (await client.get(f"/tasks/{task['id']}/tree", headers=alice)).json()["tree"]
    assert mine["children"][0]["goal"] == theirs["children"][0]["goal"]

    for body, field in [({"node_id": 99}, "node_id"),
                        ({"node_id": 1, "overrides": {"d_max": 99}}, "overrides.d_max"),
                        ({"node_id": 1, "overrides": {"executor": {"kind": "nope"}}},
                         "overrides.executor")]:
        bad = await client.post(f"/tasks/{task['id']}/fork", json=body, headers=alice)
        assert bad.status_code == 422, bad.text
        assert bad.json()["errors"][0]["field"].startswith(field), bad.json()
    other = await client.post(f"/tasks/{task['id']}/fork", json={"node_id": 1}, headers=bob)
    assert other.status_code == 404
