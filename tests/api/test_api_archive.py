"""``GET /tasks/{id}/export`` and ``POST /tasks/import``: a task moves to another tenant with
the same tree; the archive is checked (422 naming the field, 413 past the body limit); only a
finished task is exported."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from adapt.settings import Settings
from api.main import create_app
from tests.api.apiutil import create, run_engine, set_task
from tests.api.test_api_auth import bearer, new_key
from tests.support.api import FakeDispatcher, make_settings


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, max_body_bytes=4_000_000)


def without_ids(tree: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tree.items() if k != "task_id"}


async def test_export_then_import_as_another_tenant(client: httpx.AsyncClient,
                                                    app: FastAPI) -> None:
    alice, bob = bearer(await new_key(app, "alice")), bearer(await new_key(app, "bob"))
    task = await create(client, headers=alice)
    await run_engine(app, task["id"])
    got = await client.get(f"/tasks/{task['id']}/export", headers=alice)
    assert got.status_code == 200, got.text
    assert got.headers["content-disposition"] == f'attachment; filename="task-{task["id"]}.json"'
    archive = got.json()
    assert archive["schema_version"] == 2 and archive["task"]["id"] == task["id"]
    assert (await client.get(f"/tasks/{task['id']}/export", headers=bob)).status_code == 404

    loaded = await client.post("/tasks/import", json=archive, headers=bob)
    assert loaded.status_code == 201, loaded.text
    new = loaded.json()
    assert new["id"] != task["id"] and loaded.headers["location"] == f"/tasks/{new['id']}"
    assert new["status"] == "succeeded" or new["finished"]
    mine = (await client.get(f"/tasks/{task['id']}/tree", headers=alice)).json()
    theirs = (await client.get(f"/tasks/{new['id']}/tree", headers=bob)).json()
    assert without_ids(theirs) == without_ids(mine) and theirs["tree"] is not None
    node = mine["tree"]["id"]
    a = (await client.get(f"/tasks/{task['id']}/nodes/{node}", headers=alice)).json()
    b = (await client.get(f"/tasks/{new['id']}/nodes/{node}", headers=bob)).json()
    assert a["llm_calls"] == b["llm_calls"] and a["llm_calls"][0]["prompt"]
    assert (await client.get(f"/tasks/{new['id']}", headers=alice)).status_code == 404


async def test_a_bad_archive_is_a_422_naming_the_field_and_an_active_task_a_409(
        client: httpx.AsyncClient, app: FastAPI) -> None:
    task = await create(client)
    assert (await client.get(f"/tasks/{task['id']}/export")).status_code == 409
    await run_engine(app, task["id"])
    await set_task(app, task["id"], status="succeeded")
    archive = (await client.get(f"/tasks/{task['id']}/export")).json()
    for edit, field in ((lambda a: a.update(schema_version=7), "schema_version"),
                        (lambda a: a["calls"][0].update(prompt_ref="x"), "calls[0].prompt_ref"),
                        (lambda a: a["task"].update(status="queued"), "task.status")):
        bad = {**archive, "task": dict(archive["task"]),
               "calls": [dict(c) for c in archive["calls"]]}
        edit(bad)
        answer = await client.post("/tasks/import", json=bad)
        assert answer.status_code == 422, answer.text
        assert answer.json()["errors"][0]["field"] == field
    assert (await client.post("/tasks/import", json=[1, 2])).status_code == 422


async def test_an_archive_past_the_body_limit_is_a_413(database_url: str) -> None:
    app = create_app(make_settings(database_url, max_body_bytes=4096),
                     dispatcher=FakeDispatcher())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            big = {"format": "adapt.task-archive", "schema_version": 1, "pad": "x" * 5000}
            answer = await c.post("/tasks/import", json=big)
            small = await c.post("/tasks/import", json={**big, "pad": "x"})
    assert answer.status_code == 413
    assert small.status_code == 422 and small.json()["errors"][0]["field"] == "task"
