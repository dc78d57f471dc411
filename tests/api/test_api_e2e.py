"""The API with the real embedded worker (workers.dispatchers): submit, stream, inspect."""

from __future__ import annotations

import httpx
import pytest

from adapt.settings import Settings
from api.main import create_app
from tests.api.apiutil import parse_sse

pytest.importorskip("workers.dispatchers")


async def test_submit_stream_and_inspect_with_the_embedded_worker(database_url: str) -> None:
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": database_url})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            created = await client.post("/tasks", json={"environment": "textcraft",
                                                         "environment_config": {"seed": 5}})
            assert created.status_code == 202
            task_id = created.json()["id"]
            stream = await client.get(f"/tasks/{task_id}/events")  # ends with task.finished
            events, _ = parse_sse(stream.text)
            assert [int(e.id or 0) for e in events] == list(range(1, len(events) + 1))
            assert events[-1].event == "task.finished"

            task = (await client.get(f"/tasks/{task_id}")).json()
            assert task["status"] == "succeeded" and task["attempt"] == 1
            assert task["last_seq"] == len(events) and task["usage"]["llm_calls"] > 0
            tree = (await client.get(f"/tasks/{task_id}/tree")).json()
            assert tree["nodes_count"] == task["nodes_count"] and tree["tree"]["success"]
            node = (await client.get(f"/tasks/{task_id}/nodes/1")).json()
            assert node["llm_calls"]
            ready = await client.get("/readyz")
            assert ready.status_code == 200
