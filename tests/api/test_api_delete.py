"""``DELETE /tasks/{id}``: a finished task goes with its rows (204, then 404); a queued or
running one is a 409 that says to cancel it first; another tenant's is a 404."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from adapt.store.models import EventRow, LLMCallRow, NodeRow, StepRow, Task
from tests.api.apiutil import count_rows, create, run_engine, set_task, start_task
from tests.api.test_api_auth import bearer, new_key


async def test_a_finished_task_is_deleted_with_its_rows(client: httpx.AsyncClient,
                                                        app: FastAPI) -> None:
    task = await create(client)
    kept = await create(client)
    for t in (task, kept):
        await run_engine(app, t["id"])
    counts = {m: await count_rows(app, m) for m in (NodeRow, StepRow, LLMCallRow, EventRow)}
    assert all(counts.values())
    gone = await client.delete(f"/tasks/{task['id']}")
    assert gone.status_code == 204 and gone.content == b""
    for path in ("", "/tree", "/events?since=0"):
        assert (await client.get(f"/tasks/{task['id']}{path}")).status_code == 404
    assert (await client.delete(f"/tasks/{task['id']}")).status_code == 404
    for model, before in counts.items():  # the other task's rows, half of them
        assert 0 < await count_rows(app, model) < before
    assert await count_rows(app, Task) == 1
    assert (await client.get(f"/tasks/{kept['id']}/tree")).status_code == 200


async def test_a_queued_or_running_task_is_a_409_that_says_to_cancel(
        client: httpx.AsyncClient, app: FastAPI) -> None:
    task = await create(client)
    for step in ("queued", "running"):
        if step == "running":
            await start_task(app, task["id"])
        refused = await client.delete(f"/tasks/{task['id']}")
        assert refused.status_code == 409, refused.text
        problem = refused.json()
        assert problem["type"].endswith("task-active") and problem["status"] == 409
        assert problem["task_id"] == task["id"] and problem["task_status"] == step
        assert f"POST /tasks/{task['id']}/cancel" in problem["detail"]
        assert (await client.get(f"/tasks/{task['id']}")).status_code == 200
    await set_task(app, task["id"], status="cancelled")
    assert (await client.delete(f"/tasks/{task['id']}")).status_code == 204


async def test_another_tenants_task_is_not_found(client: httpx.AsyncClient,
                                                 app: FastAPI) -> None:
    theirs = await create(client, headers=bearer(await new_key(app, "acme")))
    await set_task(app, theirs["id"], status="succeeded")
    mine = bearer(await new_key(app, "other"))
    assert (await client.delete(f"/tasks/{theirs['id']}", headers=mine)).status_code == 404
    assert await count_rows(app, Task) == 1
