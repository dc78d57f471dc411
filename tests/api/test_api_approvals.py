"""``/tasks/{id}/approvals`` over HTTP: the task field is validated (422 naming the field), a
waiting task is listed with ``?status=waiting``, decisions are recorded with the API key's id
and tenant, an edit is validated like a planner's plan, and another tenant sees nothing (404).
A real worker (``execute_task``) runs the task on the same database."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from adapt.service import auth
from adapt.service.execute import execute_task
from adapt.settings import Settings
from adapt.store import api_keys
from tests.api.apiutil import create, sessions_of
from tests.service.test_execute import make_ctx
from tests.support.api import FakeDispatcher

BODY: dict[str, Any] = {"environment": "textcraft", "environment_config": {"seed": 11},
                        "d_max": 2, "approval": {"plans": True}}


async def new_key(app: FastAPI, tenant: str) -> dict[str, str]:
    async with sessions_of(app)() as session:
        key = await auth.create_key(session, tenant, None)
    return {"Authorization": f"Bearer {key}"}


async def work(settings: Settings, task_id: str) -> str | None:
    ctx = make_ctx(settings.database_url, "api-test-worker")
    try:
        return await execute_task(ctx, task_id)
    finally:
        await ctx.aclose()


async def test_the_approval_field_is_validated(client: httpx.AsyncClient) -> None:
    for approval, field in [({"plans": "yes"}, "approval.plans"),
                            ({"plan": True}, "approval.plan"),
                            ({"actions": [""]}, "approval.actions.0"),
                            ("all", "approval")]:
        r = await client.post("/tasks", json={**BODY, "approval": approval})
        assert r.status_code == 422, r.text
        fields = [e["field"] for e in r.json()["errors"]]
        assert field in fields, (approval, fields)
    task = await create(client, BODY)
    detail = (await client.get(f"/tasks/{task['id']}")).json()
    assert detail["run_config"]["approval"] == {"plans": True, "actions": [],
                                                "timeout_seconds": None,
                                                "on_timeout": "reject",
                                                "parallel_siblings": False}
    plain = await create(client)
    assert (await client.get(f"/tasks/{plain['id']}")).json()["run_config"]["approval"] == {
        "plans": False, "actions": [], "timeout_seconds": None, "on_timeout": "reject",
        "parallel_siblings": False}
    r = await client.post("/tasks", json={**BODY, "approval": {"plans": True,
                                                               "timeout_seconds": 0}})
    assert r.status_code == 422
    assert [e["field"] for e in r.json()["errors"]] == ["approval.timeout_seconds"]
    r = await client.post("/tasks", json={**BODY, "approval": {"on_timeout": "ignore"}})
    assert [e["field"] for e in r.json()["errors"]] == ["approval.on_timeout"]


async def test_approve_edit_and_audit_over_http(
    client: httpx.AsyncClient, app: FastAPI, settings: Settings, dispatcher: FakeDispatcher,
) -> None:
    alice = await new_key(app, "alice")
    task = await create(client, BODY, headers=alice)
    assert await work(settings, task["id"]) == "waiting"

    waiting = await client.get("/tasks", params={"status": "waiting"}, headers=alice)
    assert [t["id"] for t in waiting.json()["items"]] == [task["id"]]
    listed = await client.get(f"/tasks/{task['id']}/approvals", headers=alice)
    assert listed.status_code == 200, listed.text
    (item,) = listed.json()["items"]
    assert item["kind"] == "plan" and item["node_id"] == 1 and item["status"] == "pending"
    assert item["proposal"]["steps"] and item["decided_by"] is None
    url = f"/tasks/{task['id']}/approvals/{item['id']}"
    tree = (await client.get(f"/tasks/{task['id']}/tree", headers=alice)).json()
    assert tree["tree"]["status"] == "awaiting_approval"

    # an edit is validated like a plan: each bad field is named
    for proposal, field in [({"steps": []}, "proposal.steps"),
                            ({"steps": ["a", 3]}, "proposal.steps.1"),
                            ({"steps": ["a", "b"], "execution_order": "Step 1 AND"},
                             "proposal.execution_order"),
                            ({"steps": ["a", "b"], "execution_order": "Step 1 AND Step 3"},
                             "proposal.execution_order"),
                            ({"steps": ["a"], "oops": 1}, "proposal.oops")]:
        r = await client.post(url, json={"decision": "edit", "proposal": proposal},
                              headers=alice)
        assert r.status_code == 422, r.text
        assert [e["field"] for e in r.json()["errors"]] == [field], r.json()
    r = await client.post(url, json={"decision": "approve", "proposal": {"steps": ["a"]}},
                          headers=alice)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "proposal"
    r = await client.post(url, json={"decision": "maybe"}, headers=alice)
    assert r.status_code == 422

    dispatcher.dispatched.clear()
    steps = item["proposal"]["steps"]
    edited = {"steps": [steps[0], "fetch 1 quartz"], "execution_order": "(Step 1 AND Step 2)"}
    r = await client.post(url, json={"decision": "edit", "proposal": edited,
                                     "reason": "quartz first"}, headers=alice)
    assert r.status_code == 200, r.text
    decided = r.json()
    async with sessions_of(app)() as session:
        keys = await api_keys.all_keys(session, "alice")
    assert decided["status"] == "edited" and decided["decided_by"] == keys[0].id
    assert decided["decided_tenant"] == "alice" and decided["decided_at"]
    assert decided["edited"] == edited and decided["reason"] == "quartz first"
    assert decided["changes"]["steps"]["after"] == edited["steps"]
    assert dispatcher.dispatched == [task["id"]], "the decision queues the task again"
    assert (await client.get(f"/tasks/{task['id']}", headers=alice)).json()["status"] == \
        "queued"
    again = await client.post(url, json={"decision": "approve"}, headers=alice)
    assert again.status_code == 409 and again.json()["type"].endswith("not-decidable")

    assert await work(settings, task["id"]) in ("succeeded", "failed")
    tree = (await client.get(f"/tasks/{task['id']}/tree", headers=alice)).json()["tree"]
    assert [c["goal"] for c in tree["children"]] == edited["steps"]
    evs = (await client.get(f"/tasks/{task['id']}/events", params={"since": 0},
                            headers=alice)).json()["events"]
    decided_events = [e for e in evs if e["type"] == "approval.decided"]
    assert decided_events and decided_events[0]["data"]["decision"] == "edit"
    assert decided_events[0]["data"]["decided_by"] == keys[0].id


async def test_another_tenant_sees_no_approvals(
    client: httpx.AsyncClient, app: FastAPI, settings: Settings,
) -> None:
    alice, bob = await new_key(app, "alice"), await new_key(app, "bob")
    task = await create(client, BODY, headers=alice)
    assert await work(settings, task["id"]) == "waiting"
    (item,) = (await client.get(f"/tasks/{task['id']}/approvals",
                                headers=alice)).json()["items"]
    url = f"/tasks/{task['id']}/approvals/{item['id']}"
    assert (await client.get(f"/tasks/{task['id']}/approvals", headers=bob)).status_code == 404
    r = await client.post(url, json={"decision": "approve"}, headers=bob)
    assert r.status_code == 404, r.text
    unknown = await client.post(f"/tasks/{task['id']}/approvals/{'0' * 32}",
                                json={"decision": "approve"}, headers=alice)
    assert unknown.status_code == 404
    still = (await client.get(f"/tasks/{task['id']}/approvals", headers=alice)).json()
    assert still["items"][0]["status"] == "pending"


async def test_an_edited_tool_call_over_http(
    client: httpx.AsyncClient, settings: Settings, dispatcher: FakeDispatcher,
) -> None:
    """The tools executor asks before each ``craft`` call; an edit of the call's arguments is
    checked against the tool's input schema (422 naming ``proposal.arguments...``), and the
    edited call is what the environment runs and what the node's step shows."""
    body = {"environment": "textcraft", "environment_config": {"seed": 3},
            "executor": {"kind": "tools", "model": "sim:textcraft?capability=1"},
            "planner": {"output": "json"}, "d_max": 2, "approval": {"actions": ["craft"]}}
    task = await create(client, body)
    assert await work(settings, task["id"]) == "waiting"
    (item,) = (await client.get(f"/tasks/{task['id']}/approvals")).json()["items"]
    proposal = item["proposal"]
    assert item["kind"] == "action" and proposal["name"] == "craft"
    assert set(proposal) == {"action", "name", "arguments", "schema"}
    assert proposal["schema"]["properties"]["ingredients"]["type"] == "array"
    url = f"/tasks/{task['id']}/approvals/{item['id']}"
    args = proposal["arguments"]
    for bad, field in [({"arguments": {**args, "count": 0}}, "proposal.arguments.count"),
                       ({"arguments": {"item": args["item"], "count": 1}},
                        "proposal.arguments.ingredients"),
                       ({"arguments": {**args, "ingredients": [{"item": "x"}]}},
                        "proposal.arguments.ingredients.0.count"),
                       ({"arguments": {**args, "colour": "red"}}, "proposal.arguments.colour"),
                       ({"name": "get", "arguments": args}, "proposal.name"),
                       ({"arguments": "count=2"}, "proposal.arguments")]:
        r = await client.post(url, json={"decision": "edit", "proposal": bad})
        assert r.status_code == 422, (bad, r.text)
        assert [e["field"] for e in r.json()["errors"]] == [field], (bad, r.json())
    edited = {**args, "count": args["count"] + 1}
    r = await client.post(url, json={"decision": "edit", "reason": "one more",
                                     "proposal": {"name": "craft", "arguments": edited}})
    assert r.status_code == 200, r.text
    decided = r.json()
    assert decided["edited"] == {"name": "craft", "arguments": edited}
    assert decided["changes"] == {"arguments": {"before": args, "after": edited}}
    node_id = item["node_id"]

    status = await work(settings, task["id"])
    while status == "waiting":  # the later crafts are approved as they are
        for later in (await client.get(f"/tasks/{task['id']}/approvals",
                                        params={"status": "pending"})).json()["items"]:
            assert (await client.post(f"/tasks/{task['id']}/approvals/{later['id']}",
                                      json={"decision": "approve"})).status_code == 200
        status = await work(settings, task["id"])
    assert status in ("succeeded", "failed")
    node = (await client.get(f"/tasks/{task['id']}/nodes/{node_id}")).json()
    (step,) = [s for s in node["steps"] if (s["extra"] or {}).get("approval")]
    using = ", ".join(f"{i['count']} {i['item']}" for i in edited["ingredients"])
    assert step["text"] == f"craft {edited['count']} {edited['item']} using {using}"
    assert step["text"] != proposal["action"]
    assert step["extra"]["tool"]["arguments"] == edited
    assert step["extra"]["approval"]["proposed"]["arguments"] == args
