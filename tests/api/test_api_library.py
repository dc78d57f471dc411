"""``/library`` and ``reuse`` through the API (issue 31): the tenant's entries with their counts,
paged; delete; export/import with problem details naming the field; ``reuse`` validated; and a
task run by the embedded worker that replays what an earlier task learned (0 calls, its origin
named in the tree and the node detail)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from adapt.engine.experience import ExperienceReport, Learned
from adapt.service import auth
from adapt.store.library import DbLibrary
from tests.api.apiutil import sessions_of
from tests.security.service import run_to_end, service

GOAL = "craft 4 oak planks using 1 oak logs"


async def keys(app: FastAPI, *tenants: str) -> list[dict[str, str]]:
    out = []
    async with sessions_of(app)() as session:
        for tenant in tenants:
            out.append({"Authorization": f"Bearer {await auth.create_key(session, tenant)}"})
    return out


async def learn(app: FastAPI, tenant: str, *goals: str) -> None:
    await DbLibrary(sessions_of(app), tenant, "t-origin", None).save(ExperienceReport(learned=[
        Learned("textcraft", goal, goal, ("get 1 oak logs", goal), 2, "sim:textcraft", True)
        for goal in goals]))


async def test_list_page_delete_and_tenants(app: FastAPI, client: httpx.AsyncClient) -> None:
    acme, other = await keys(app, "acme", "other")
    await learn(app, "acme", GOAL, "craft 4 stick using 2 planks", "fetch 3 honeycomb")
    page = (await client.get("/library?limit=2", headers=acme)).json()
    assert page["total"] == 3 and len(page["items"]) == 2 and page["limit"] == 2
    newest = page["items"][0]
    assert newest["goal"] == "fetch 3 honeycomb" and newest["simulated"] is True
    assert (newest["uses"], newest["failures"]) == (0, 0)
    assert newest["origin"] == {"task": "t-origin", "node": 2}
    rest = (await client.get("/library?limit=2&offset=2", headers=acme)).json()
    assert [e["goal"] for e in rest["items"]] == [GOAL]
    # another tenant sees nothing, and cannot delete acme's entries
    assert (await client.get("/library", headers=other)).json()["total"] == 0
    gone = await client.delete(f"/library/{newest['id']}", headers=other)
    assert gone.status_code == 404 and gone.json()["type"] == "urn:adapt:problem:not-found"
    assert (await client.delete(f"/library/{newest['id']}", headers=acme)).status_code == 204
    assert (await client.get("/library", headers=acme)).json()["total"] == 2
    assert (await client.delete(f"/library/{newest['id']}", headers=acme)).status_code == 404
    assert (await client.delete("/library/99999999999", headers=acme)).status_code == 422


async def test_export_import_round_trip(app: FastAPI, client: httpx.AsyncClient) -> None:
    acme, other = await keys(app, "acme", "other")
    await learn(app, "acme", GOAL, "fetch 3 honeycomb")
    exported = (await client.get("/library/export", headers=acme)).json()
    assert exported["format"] == "adapt-library" and len(exported["entries"]) == 2
    done = await client.post("/library/import", json=exported, headers=other)
    assert done.status_code == 200 and done.json() == {"added": 2, "skipped": 0}
    back = (await client.get("/library/export", headers=other)).json()
    strip = [{k: v for k, v in e.items() if k != "origin"} for e in back["entries"]]
    assert strip == [{k: v for k, v in e.items() if k != "origin"} for e in exported["entries"]]
    assert all(e["origin"]["imported"] for e in back["entries"])
    again = await client.post("/library/import", json=exported, headers=other)
    assert again.json() == {"added": 0, "skipped": 2}


ENTRY: dict[str, Any] = {"environment": "textcraft", "goal": GOAL, "actions": ["get 1 oak logs"]}


@pytest.mark.parametrize(("body", "field"), [
    ({"format": "other", "entries": []}, "format"),
    ({"entries": [{**ENTRY, "environment": "nosuch"}]}, "entries.0.environment"),
    ({"entries": [ENTRY, {**ENTRY, "actions": []}]}, "entries.1.actions"),
    ({"entries": [{**ENTRY, "actions": ["x" * 2001]}]}, "entries.0.actions.0"),
    ({"entries": [{**ENTRY, "goal": "g" * 1001}]}, "entries.0.goal"),
    ({"entries": [{**ENTRY, "uses": -1}]}, "entries.0.uses"),
    ({"entries": [{**ENTRY, "failures": 2**31}]}, "entries.0.failures"),
    ({"entries": [{**ENTRY, "origin": {str(i): i for i in range(16)}}]}, "entries.0.origin"),
    ({"entries": [{**ENTRY, "extra": 1}]}, "entries.0.extra"),
    ({"entries": [{**ENTRY, "goal": "nul \u0000"}]}, "entries.0.goal"),
    ({"entries": [{**ENTRY, "kind": "recipe"}]}, "entries.0.kind"),
    ({"entries": [{**ENTRY, "kind": "plan", "logic": ""}]}, "entries.0.logic"),
])
async def test_bad_imports_are_422_problems_naming_the_field(
        app: FastAPI, client: httpx.AsyncClient, body: dict[str, Any], field: str) -> None:
    response = await client.post("/library/import", json=body)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"] == "urn:adapt:problem:validation-error"
    assert problem["errors"][0]["field"] == field, problem
    assert (await client.get("/library")).json()["total"] == 0


async def test_an_import_of_too_many_entries_is_refused(database_url: str) -> None:
    entry = {"environment": "textcraft", "goal": "g", "actions": ["a"]}
    async with service(database_url, ADAPT_MAX_BODY_BYTES=1_048_576) as client:
        response = await client.post("/library/import", json={"entries": [entry] * 2001})
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == "entries"
        assert (await client.get("/library")).json()["total"] == 0


@pytest.mark.parametrize(("extra", "field"), [
    ({"reuse": {"skills": "yes"}}, "reuse.skills"),
    ({"reuse": {"skill": True}}, "reuse.skill"),
    ({"reuse": {"skills": True}, "verification": "off"}, "reuse.skills"),
    ({"reuse": {"skills": True}, "profile": "paper"}, "reuse.skills"),
    ({"reuse": {"plans": True}, "verification": "off"}, "reuse.plans"),
    ({"reuse": {"plans": True, "plans_mode": "copy"}}, "reuse.plans_mode"),
])
async def test_bad_reuse_is_a_422_naming_the_field(
        client: httpx.AsyncClient, extra: dict[str, Any], field: str) -> None:
    body = {"environment": "textcraft", "environment_config": {"seed": 1}, **extra}
    response = await client.post("/tasks", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == field, response.json()


async def test_a_later_task_replays_what_an_earlier_one_learned(database_url: str) -> None:
    body = {"environment": "textcraft", "environment_config": {"goal": "activator rail"},
            "d_max": 3, "executor": {"model": "sim:textcraft?capability=1"},
            "reuse": {"skills": True}}
    async with service(database_url) as client:
        first = await run_to_end(client, body)
        assert first["run_config"]["reuse"] == {"skills": True, "plans": False,
                                                "plans_mode": "reuse"}
        entries = (await client.get("/library")).json()
        assert entries["total"] > 0
        assert all(e["origin"]["task"] == first["id"] for e in entries["items"])
        second = await run_to_end(client, body)
        tree = (await client.get(f"/tasks/{second['id']}/tree")).json()["tree"]
        reused = [n for n in walk(tree) if n["reused"] is not None]
        assert reused, tree
        node = reused[0]
        assert node["termination"] == "reused" and node["usage"]["llm_calls"] == 0
        assert node["reused"]["task"] == first["id"] and node["reused"]["simulated"] is True
        detail = (await client.get(f"/tasks/{second['id']}/nodes/{node['id']}")).json()
        assert detail["llm_calls"] == [] and detail["reused"] == node["reused"]
        assert all(s["extra"]["replay"]["entry"] == node["reused"]["entry"]
                   for s in detail["steps"])
        after = (await client.get("/library")).json()["items"]
    assert second["status"] == first["status"]
    assert second["usage"]["llm_calls"] < first["usage"]["llm_calls"]
    assert sum(e["uses"] for e in after) == len(reused)


async def test_a_later_task_reuses_a_plan_an_earlier_one_learned(database_url: str) -> None:
    body = {"environment": "textcraft", "environment_config": {"goal": "activator rail"},
            "d_max": 3, "executor": {"model": "sim:textcraft?capability=1"},
            "reuse": {"plans": True}}
    async with service(database_url) as client:
        first = await run_to_end(client, body)
        entries = (await client.get("/library")).json()["items"]
        assert entries and {e["kind"] for e in entries} == {"plan"}, entries
        assert all(e["logic"].startswith("(Step 1") for e in entries)
        second = await run_to_end(client, body)
        tree = (await client.get(f"/tasks/{second['id']}/tree")).json()["tree"]
        planned = [(await client.get(f"/tasks/{second['id']}/nodes/{n['id']}")).json()
                   for n in walk(tree) if n["children"]]
        assert planned and all(n["plan"]["reused"]["mode"] == "reuse" for n in planned)
        assert {n["plan"]["reused"]["task"] for n in planned} == {first["id"]}
        roles = [c["role"] for n in planned for c in n["llm_calls"]]
        assert "planner" not in roles and "executor" in roles  # no planner call on them
        after = (await client.get("/library")).json()["items"]
    assert second["status"] == first["status"] == "succeeded"
    assert second["usage"]["llm_calls"] < first["usage"]["llm_calls"]
    assert sum(e["uses"] for e in after) == len(planned)


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for kid in node["children"] for n in walk(kid))]
