"""``/tasks/{id}/events``: the task's event log as Server-Sent Events or as JSON pages."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse

from api.deps import SessionsDep, TaskServiceDep
from api.routes.tasks import PROBLEMS
from api.schemas import EVENT, EventList, Problem
from api.sse import CountedStream, StreamOptions, event_json, event_stream

router = APIRouter(prefix="/tasks", tags=["events"])

DESCRIPTION = """\
The task's append-only event log. Every event has a per-task sequence number `seq` (gap-free,
from 1) and a `type`: `node.created`, `node.updated` (`{"node": Node}`), `step`
(`{"step": Step}`), `llm_call` (`{"call": LLMCall}`; its `prompt` and `messages` are null: the prompt is stored
once, with the call, and read with `GET /tasks/{id}/nodes/{node_id}`) and, last, `task.finished`
(`{"status", "result", "error"}`).

**Which format.** The same path serves two formats:

- **Server-Sent Events** (`text/event-stream`) when the request's `Accept` header contains
  `text/event-stream`, and by default (no `since`, no `Accept: application/json`). Each event
  is sent as `id: <seq>`, `event: <type>`, `data: {"seq", "type", "created_at", "data"}`. The
  stream starts after `Last-Event-ID` (header; what browsers send on reconnect), else after
  `since`, else from the first event; it polls for new events and sends a `: keep-alive`
  comment every ~15 s. It closes after sending `task.finished`, and at once if the task is
  finished and the client already has every event. Reconnecting with `Last-Event-ID` at any
  time, also after the task finished, resumes without gaps or duplicates. A tenant may hold
  at most `ADAPT_TENANT_MAX_EVENT_STREAMS` streams open at once (per API process); one more is
  a 429 with `Retry-After`, and a stream's slot is freed as soon as it closes.
- **JSON** (`application/json`, `EventList`) when `since` is given (and `Accept` does not ask
  for `text/event-stream`) or `Accept` is `application/json`: at most `limit` events with
  `seq > since`, `last_seq` to pass as the next `since`, and `finished` (true when the task is
  finished and nothing is left to fetch).
"""


def wants_stream(accept: str | None, since: int | None) -> bool:
    wanted = (accept or "").lower()
    if "text/event-stream" in wanted:
        return True
    return since is None and "application/json" not in wanted


@router.get(
    "/{task_id}/events",
    response_model=EventList,
    summary="Task events: Server-Sent Events stream or JSON page",
    description=DESCRIPTION,
    responses={
        **PROBLEMS,
        429: {"model": Problem, "description": "The tenant already holds "
              "ADAPT_TENANT_MAX_EVENT_STREAMS open event streams (SSE); see Retry-After"},
        200: {
            "description": "SSE stream (text/event-stream) or a JSON page of events",
            "content": {
                "text/event-stream": {
                    "schema": {"type": "string"},
                    "example": 'retry: 1000\n\nid: 1\nevent: node.created\ndata: {"seq":1,'
                    '"type":"node.created","created_at":"2025-01-01T00:00:00+00:00",'
                    '"data":{"node":{"id":1,"goal":"craft beehive"}}}\n\n',
                },
            },
        },
    },
)
async def task_events(
    task_id: str,
    request: Request,
    service: TaskServiceDep,
    sessions: SessionsDep,
    since: Annotated[int | None, Query(ge=0, le=2**31 - 1,
                                       description="Return events with seq > since (JSON).")]
    = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Most events per JSON page.")]
    = 100,
    last_event_id: Annotated[int | None, Header(
        alias="Last-Event-ID", ge=0, le=2**31 - 1,
        description="SSE: resume after this seq.")] = None,
    accept: Annotated[str | None, Header()] = None,
) -> Response:
    task = await service.task(task_id)

    if wants_stream(accept, since):
        start = since or 0
        if last_event_id is not None:
            start = last_event_id
        options: StreamOptions = getattr(request.app.state, "stream_options", StreamOptions())
        await service.close()  # the stream polls with its own short sessions
        return CountedStream(
            event_stream(sessions, task.id, start, options, request.is_disconnected),
            request.app.state.stream_slots, service.tenant,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    page = await service.events(task, since or 0, limit)
    body = EventList(
        events=[EVENT.validate_python(event_json(e)) for e in page.events],
        last_seq=page.last_seq, finished=page.finished, status=task.status,
    )
    return JSONResponse(body.model_dump(mode="json"))
