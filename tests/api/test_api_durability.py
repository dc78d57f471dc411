"""The API under faults: /readyz knows the live workers, reads and submits answer 503 with
Retry-After while the database is down (never a 500, never SQL), POST /tasks/{id}/resume."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from adapt.service.execute import LIVENESS_BEATS
from adapt.store import workers as registry
from adapt.store.event_log import stored_events
from adapt.store.models import LLMCallRow, NodeRow, Task
from tests.api.apiutil import create, sessions_of, set_task
from tests.support.api import FakeDispatcher


class QueueDispatcher(FakeDispatcher):
    """A dispatcher with a broker queue (as ``CeleryDispatcher``)."""

    queue = "adapt-test-queue"


async def test_readyz_is_not_ready_without_a_live_worker(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    app.state.dispatcher = QueueDispatcher()
    none = await client.get("/readyz")
    assert none.status_code == 503
    assert none.json()["failed"] == ["workers"]
    assert "no live worker" in none.json()["checks"]["workers"]

    sessions = sessions_of(app)
    await registry.beat(sessions, "w-other-queue", queue="elsewhere", hostname="h", pid=1,
                        running=0, ttl=30)
    assert (await client.get("/readyz")).status_code == 503
    await registry.beat(sessions, "w-1", queue=QueueDispatcher.queue, hostname="h", pid=2,
                        running=0, ttl=30)
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["workers"] == "ok"

    # a worker that stopped beating drops out once its row expires; one that said goodbye at once
    await registry.beat(sessions, "w-1", queue=QueueDispatcher.queue, hostname="h", pid=2,
                        running=0, ttl=-1)
    assert (await client.get("/readyz")).status_code == 503
    await registry.beat(sessions, "w-1", queue=QueueDispatcher.queue, hostname="h", pid=2,
                        running=0, ttl=30)
    await registry.forget(sessions, "w-1")
    assert (await client.get("/readyz")).status_code == 503
    assert LIVENESS_BEATS >= 2  # a single late beat does not mark a worker dead


async def test_database_down_answers_503_with_retry_after(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    good = app.state.engine
    from adapt.store.db import create_engine, session_factory

    dead = create_engine("postgresql://nobody@127.0.0.1:1/none")
    app.state.sessions = session_factory(dead)
    try:
        for method, path, body in [("GET", f"/tasks/{task['id']}", None), ("GET", "/tasks", None),
                                   ("POST", "/tasks", {"environment": "textcraft",
                                                       "environment_config": {"seed": 1}})]:
            response = await client.request(method, path, json=body)
            assert response.status_code == 503, (path, response.text)
            assert response.headers["retry-after"].isdigit()
            assert response.headers["content-type"] == "application/problem+json"
            assert "SELECT" not in response.text and "INSERT" not in response.text
    finally:
        await dead.dispose()
        app.state.sessions = session_factory(good)
    assert (await client.get(f"/tasks/{task['id']}")).status_code == 200


async def test_resume_requeues_an_interrupted_task_only(
    client: httpx.AsyncClient, app: FastAPI, dispatcher: FakeDispatcher
) -> None:
    task_id = (await create(client))["id"]
    sessions = sessions_of(app)
    message = "provider unavailable: HTTP 429 (the task's retry budget of 0 is spent)"
    async with sessions.begin() as s:
        s.add(NodeRow(task_id=task_id, id=1, depth=1, kind="task", goal="g", status="failed",
                      error=message))
    await set_task(app, task_id, status="error", error=message, attempt=1)

    queued = await client.get(f"/tasks/{task_id}")
    assert queued.json()["status"] == "error"
    dispatcher.dispatched.clear()
    response = await client.post(f"/tasks/{task_id}/resume")
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "queued" and dispatcher.dispatched == [task_id]
    async with sessions() as s:
        row = await s.get(Task, task_id)
        assert row is not None and row.error is None and row.finished_at is None
        node = await s.get(NodeRow, (task_id, 1))
        assert node is not None and node.status == "running" and node.error is None
        types = [e[1] for e in await stored_events(s, task_id)]
    assert types[-1] == "task.resumed"
    # the event log's JSON page serves it, typed like every other event
    page = await client.get(f"/tasks/{task_id}/events", params={"since": 0})
    assert page.status_code == 200, page.text
    assert page.json()["events"][-1]["type"] == "task.resumed"
    assert page.json()["events"][-1]["data"] == {"status": "queued", "after": message}

    again = await client.post(f"/tasks/{task_id}/resume")  # idempotent: already queued
    assert again.status_code == 202 and dispatcher.dispatched == [task_id]

    await set_task(app, task_id, status="succeeded", result={"status": "succeeded"})
    final = await client.post(f"/tasks/{task_id}/resume")
    assert final.status_code == 409 and final.json()["type"].endswith("not-resumable")
    missing = await client.post("/tasks/0123456789abcdef0123456789abcdef/resume")
    assert missing.status_code == 404


async def test_retries_show_on_the_call_in_the_node_detail_and_in_metrics(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task_id = (await create(client))["id"]
    async with sessions_of(app).begin() as s:
        s.add(NodeRow(task_id=task_id, id=1, depth=1, kind="task", goal="g", status="running"))
        s.add(LLMCallRow(task_id=task_id, id=1, node_id=1, role="executor", model="m",
                         request_fingerprint="f", response={"text": "ok"}, completion="ok",
                         retries=3))
    detail = await client.get(f"/tasks/{task_id}/nodes/1")
    assert detail.status_code == 200, detail.text
    assert [c["retries"] for c in detail.json()["llm_calls"]] == [3]
    metrics = (await client.get("/metrics")).text
    assert "adapt_llm_retries_total 3.0" in metrics
    assert "adapt_workers_live 0.0" in metrics
