"""The Server-Sent Events stream of a task's event log, fed by polling the database.

Each poll is one cheap query (the task's status and ``last_seq``); events are fetched only
when ``last_seq`` moved. A fresh session is used per poll, so a long stream holds no
connection while it waits. A tenant holds at most ``ADAPT_TENANT_MAX_EVENT_STREAMS`` streams at
once in a process (:class:`StreamSlots`, :class:`CountedStream`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from adapt.store.event_log import NodeStates, StoredEvent, read_events
from adapt.store.queries import task_progress
from api.problems import problem_response

#: seconds a client refused for too many streams is asked to wait
STREAMS_RETRY_AFTER = 5

FINISHED_EVENT = "task.finished"


@dataclass(frozen=True)
class StreamOptions:
    poll_seconds: float = 0.2
    keepalive_seconds: float = 15.0
    batch: int = 500
    retry_ms: int = 1000


def event_json(event: StoredEvent) -> dict[str, Any]:
    return {"seq": event.seq, "type": event.type, "created_at": event.created_at.isoformat(),
            "data": event.data}


def format_event(event: StoredEvent) -> str:
    data = json.dumps(event_json(event), separators=(",", ":"), ensure_ascii=False)
    return f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n"


async def event_stream(
    sessions: async_sessionmaker[AsyncSession],
    task_id: str,
    after_seq: int,
    options: StreamOptions,
    is_disconnected: Callable[[], Awaitable[bool]],
) -> AsyncIterator[str]:
    """Every event with ``seq > after_seq``, then new ones as they are written; ends after
    ``task.finished``, or at once when the task is finished and nothing is left to send."""
    yield f"retry: {options.retry_ms}\n\n"
    last = after_seq
    states: NodeStates = {}  # node snapshots carried from page to page
    quiet_since = time.monotonic()
    while True:
        async with sessions() as session:
            progress = await task_progress(session, task_id)
            if progress is None:  # deleted under us
                return
            rows = (await read_events(session, task_id, last, options.batch, states=states)
                    if progress.last_seq > last else [])
        if rows and await is_disconnected():
            return  # the client went away: write nothing more
        # one write per batch: a client that stops reading (`| head`) costs one failed
        # write, not one per event
        chunk: list[str] = []
        finished = False
        for row in rows:
            chunk.append(format_event(row))
            last = row.seq
            if row.type == FINISHED_EVENT:
                finished = True
                break
        if chunk:
            yield "".join(chunk)
        if finished:
            return
        if rows:
            quiet_since = time.monotonic()
            if len(rows) == options.batch:
                continue  # more are waiting: fetch them without sleeping
        if progress.finished and last >= progress.last_seq:
            return
        if time.monotonic() - quiet_since >= options.keepalive_seconds:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        if await is_disconnected():
            return
        await asyncio.sleep(options.poll_seconds)


class StreamSlots:
    """How many event streams each tenant has open in this process, at most ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: Counter[str] = Counter()

    def acquire(self, tenant: str) -> bool:
        if self._open[tenant] >= self.limit:
            return False
        self._open[tenant] += 1
        return True

    def release(self, tenant: str) -> None:
        self._open[tenant] -= 1
        if self._open[tenant] <= 0:
            del self._open[tenant]

    def open(self, tenant: str) -> int:
        return self._open[tenant]


class CountedStream(StreamingResponse):
    """An event stream that holds one of its tenant's slots while it is sent: taken when the
    response starts, freed however it ends (finished, client gone, server stopping). With no
    slot free it answers 429 with ``Retry-After`` instead."""

    def __init__(self, content: AsyncIterator[str], slots: StreamSlots, tenant: str,
                 headers: dict[str, str]) -> None:
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self.slots = slots
        self.tenant = tenant

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.slots.acquire(self.tenant):
            iterator = self.body_iterator
            if hasattr(iterator, "aclose"):
                await iterator.aclose()  # never started: nothing to clean up but the object
            refusal = problem_response(
                429, f"this tenant already has {self.slots.limit} event streams open "
                "(ADAPT_TENANT_MAX_EVENT_STREAMS); close one, or poll with ?since=",
                slug="too-many-streams", instance=scope.get("path"),
                headers={"Retry-After": str(STREAMS_RETRY_AFTER)})
            await refusal(scope, receive, send)
            return
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slots.release(self.tenant)
