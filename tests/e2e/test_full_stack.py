"""The whole system at scale: the API, a real Celery worker process, PostgreSQL, Redis, and the
simulated model served over HTTP. POST a task, follow the SSE stream to the end, then check the
persisted tree against the engine's, resume the event log with ?since= and Last-Event-ID at
every point (no gaps, no duplicates), and poll the tree with ETags."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.settings import Settings
from adapt.sim import from_spec
from api.main import create_app
from tests.api.apiutil import parse_sse
from tests.support.simserver import SimServer
from tests.support.workers import BROKER_URL, Workers


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for c in node["children"] for n in walk(c))]


KEYS = ("id", "parent_id", "position", "kind", "goal", "depth", "logic", "status",
        "executor_success", "success", "reward", "steps_count", "usage")


async def test_post_stream_inspect_resume(
    pg_url: str, workers: Workers, queue: str, sim_factory: Callable[..., SimServer],
) -> None:
    sim = sim_factory()
    workers.start(concurrency=8, llm_endpoints=[sim.base_url])
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": pg_url,
                                        "ADAPT_BROKER_URL": BROKER_URL,
                                        "ADAPT_CELERY_QUEUE": queue,
                                        "llm_endpoints": [sim.base_url]})
    app = create_app(settings)
    model = f"openai:sim:textcraft?capability=1@{sim.base_url}"
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60) as c:
            assert (await c.get("/readyz")).status_code == 200
            created = await c.post("/tasks", json={
                "environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4,
                "executor": {"model": model}})
            assert created.status_code == 202, created.text
            task_id = created.json()["id"]

            # follow the SSE stream to the end (it closes after task.finished)
            stream = await c.get(f"/tasks/{task_id}/events",
                                 headers={"Accept": "text/event-stream"})
            events, _ = parse_sse(stream.text)
            seqs = [int(e.id or 0) for e in events]
            assert seqs == list(range(1, len(events) + 1))
            assert events[-1].event == "task.finished"
            assert json.loads(events[-1].data)["data"]["status"] == "succeeded"

            task = (await c.get(f"/tasks/{task_id}")).json()
            assert task["status"] == "succeeded" and task["reward"] == 1.0
            assert task["models"]["executor"]["simulated"] is True
            assert task["last_seq"] == len(events)

            # the persisted tree equals the tree the engine produces
            sink = MemorySink()
            await run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4),
                           from_spec("sim:textcraft?capability=1"), sink=sink)
            expected = sink.tree(with_steps=False)["tree"]
            got = await c.get(f"/tasks/{task_id}/tree")
            tree = got.json()["tree"]
            assert [{k: n[k] for k in KEYS} for n in walk(tree)] == [
                {k: n[k] for k in KEYS} for n in walk(expected)]
            for node in walk(tree):
                detail = (await c.get(f"/tasks/{task_id}/nodes/{node['id']}")).json()
                want = [s.model_dump(mode="json") for s in sink.steps.get(node["id"], [])]
                assert [{k: s[k] for k in ("index", "text", "observation")}
                        for s in detail["steps"]] == [
                    {k: s[k] for k in ("index", "text", "observation")} for s in want]

            # ETag polling: 304 while nothing changed
            etag = got.headers["etag"]
            again = await c.get(f"/tasks/{task_id}/tree", headers={"If-None-Match": etag})
            assert again.status_code == 304

            # resume from every point: JSON ?since= and SSE Last-Event-ID
            total = len(events)
            for since in range(0, total + 1, 7):
                page = (await c.get(f"/tasks/{task_id}/events",
                                    params={"since": since, "limit": 1000})).json()
                assert [e["seq"] for e in page["events"]] == list(range(since + 1, total + 1))
                sse = await c.get(f"/tasks/{task_id}/events",
                                  headers={"Accept": "text/event-stream",
                                           "Last-Event-ID": str(since)})
                resumed, _ = parse_sse(sse.text)
                assert [int(e.id or 0) for e in resumed] == list(range(since + 1, total + 1))

    # every LLM call reached the model endpoint exactly once
    assert sim.log()["counters"]["requests"] == task["usage"]["llm_calls"]
