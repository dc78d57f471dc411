"""GET /tasks/{id}/events: SSE (ids, types, resume with Last-Event-ID, after finish, live,
keep-alive) and the JSON form for pollers."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from adapt.engine.events import EVENT_TYPES
from api.sse import StreamOptions
from tests.api.apiutil import SSEEvent, create, parse_sse, run_engine

SSE = {"Accept": "text/event-stream"}


async def finished_task(client: httpx.AsyncClient, app: FastAPI) -> str:
    task = await create(client)
    await run_engine(app, task["id"])
    return str(task["id"])


async def stream(client: httpx.AsyncClient, task_id: str,
                 headers: dict[str, str] | None = None) -> tuple[list[SSEEvent], list[str]]:
    response = await client.get(f"/tasks/{task_id}/events", headers={**SSE, **(headers or {})})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    return parse_sse(response.text)


def check_consistent(events: list[SSEEvent]) -> None:
    for e in events:
        payload = e.json()
        assert payload["seq"] == int(e.id or 0) and payload["type"] == e.event
        assert e.event in EVENT_TYPES
        assert set(payload) == {"seq", "type", "created_at", "data"}


async def test_sse_after_finish_sends_everything_then_closes(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task_id = await finished_task(client, app)
    last_seq = (await client.get(f"/tasks/{task_id}")).json()["last_seq"]
    events, _ = await stream(client, task_id)
    assert [int(e.id or 0) for e in events] == list(range(1, last_seq + 1))
    check_consistent(events)
    assert events[0].event == "node.created"
    assert events[-1].event == "task.finished"
    assert events[-1].json()["data"]["status"] == "succeeded"
    assert {e.event for e in events} == set(EVENT_TYPES) - {
        "task.resumed", "approval.requested", "approval.decided"}
    node = events[0].json()["data"]["node"]
    assert node["id"] == 1 and node["depth"] == 1


async def test_sse_resumes_with_last_event_id_without_gaps_or_duplicates(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task_id = await finished_task(client, app)
    full, _ = await stream(client, task_id)
    n = len(full)
    for cut in (1, n // 2, n - 1):
        rest, _ = await stream(client, task_id, {"Last-Event-ID": str(cut)})
        ids = [int(e.id or 0) for e in full[:cut]] + [int(e.id or 0) for e in rest]
        assert ids == list(range(1, n + 1))
        assert [e.data for e in rest] == [e.data for e in full[cut:]]
    # past the end of a finished task: closes at once with nothing
    done, _ = await stream(client, task_id, {"Last-Event-ID": str(n)})
    assert done == []
    beyond, _ = await stream(client, task_id, {"Last-Event-ID": str(n + 50)})
    assert beyond == []


async def test_sse_with_since_and_by_default(client: httpx.AsyncClient, app: FastAPI) -> None:
    task_id = await finished_task(client, app)
    response = await client.get(f"/tasks/{task_id}/events", params={"since": 3}, headers=SSE)
    events, _ = parse_sse(response.text)
    assert events[0].id == "4"
    default = await client.get(f"/tasks/{task_id}/events")  # Accept: */*
    assert default.headers["content-type"].startswith("text/event-stream")
    # Last-Event-ID wins over since
    both = await client.get(f"/tasks/{task_id}/events", params={"since": 3},
                            headers={**SSE, "Last-Event-ID": "5"})
    assert parse_sse(both.text)[0][0].id == "6"


async def test_live_stream_follows_a_running_task(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    reader = asyncio.create_task(client.get(f"/tasks/{task['id']}/events", headers=SSE))
    await asyncio.sleep(0.1)
    await run_engine(app, task["id"])
    response = await asyncio.wait_for(reader, 30)
    events, _ = parse_sse(response.text)
    last_seq = (await client.get(f"/tasks/{task['id']}")).json()["last_seq"]
    assert [int(e.id or 0) for e in events] == list(range(1, last_seq + 1))
    assert events[-1].event == "task.finished"


async def test_keep_alive_comments_while_waiting_and_cancel_ends_stream(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    app.state.stream_options = StreamOptions(poll_seconds=0.01, keepalive_seconds=0.05)
    task = await create(client)
    reader = asyncio.create_task(client.get(f"/tasks/{task['id']}/events", headers=SSE))
    await asyncio.sleep(0.4)
    assert not reader.done()
    await client.post(f"/tasks/{task['id']}/cancel")
    response = await asyncio.wait_for(reader, 10)
    events, comments = parse_sse(response.text)
    assert "keep-alive" in comments
    assert [(e.id, e.event) for e in events] == [("1", "task.finished")]
    assert events[0].json()["data"] == {"status": "cancelled", "result": None,
                                        "error": "cancelled before it started"}


async def test_json_polling_pages_through_events(client: httpx.AsyncClient, app: FastAPI) -> None:
    task_id = await finished_task(client, app)
    everything = (await client.get(f"/tasks/{task_id}/events",
                                   params={"since": 0, "limit": 1000})).json()
    n = len(everything["events"])
    assert [e["seq"] for e in everything["events"]] == list(range(1, n + 1))
    assert everything["finished"] is True and everything["last_seq"] == n
    assert everything["status"] == "succeeded"

    collected: list[dict[str, Any]] = []
    since = 0
    while True:
        page = (await client.get(f"/tasks/{task_id}/events",
                                 params={"since": since, "limit": 7})).json()
        collected += page["events"]
        assert page["last_seq"] == (page["events"][-1]["seq"] if page["events"] else since)
        since = page["last_seq"]
        if page["finished"]:
            break
        assert page["events"]
    assert collected == everything["events"]

    past = (await client.get(f"/tasks/{task_id}/events", params={"since": n + 10})).json()
    assert past == {"events": [], "last_seq": n + 10, "finished": True, "status": "succeeded"}


async def test_json_by_accept_header_and_for_unfinished_tasks(client: httpx.AsyncClient) -> None:
    task = await create(client)
    response = await client.get(f"/tasks/{task['id']}/events",
                                headers={"Accept": "application/json"})
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"events": [], "last_seq": 0, "finished": False,
                               "status": "queued"}


# -- a real HTTP server: events arrive while the task runs ---------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def server(app: FastAPI) -> AsyncIterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    srv = uvicorn.Server(config)
    runner = asyncio.create_task(srv.serve())
    for _ in range(200):
        if srv.started:
            break
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    await asyncio.wait_for(runner, 10)


async def test_stream_delivers_events_incrementally_over_http(
    server: str, app: FastAPI
) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=10) as http:
        task = await create(http)
        seen: list[str] = []
        async with http.stream("GET", f"/tasks/{task['id']}/events", headers=SSE) as response:
            assert response.status_code == 200
            runner: asyncio.Task[None] | None = None
            async for line in response.aiter_lines():
                if line.startswith("retry:") and runner is None:
                    # the stream is open before the task has produced anything
                    runner = asyncio.create_task(run_engine(app, task["id"]))
                if line.startswith("event: "):
                    seen.append(line.removeprefix("event: "))
            assert runner is not None
            await runner
        assert seen[0] == "node.created" and seen[-1] == "task.finished"
        last_seq = (await http.get(f"/tasks/{task['id']}")).json()["last_seq"]
        assert len(seen) == last_seq
