"""``DbSink``: persists every engine event, as the tree grows.

Events are buffered and written in one transaction when the engine flushes, which it does before
every LLM call and at the end, and as soon as an LLM call was answered (so a crash never loses
a call that was paid for, except one still in flight).
Each transaction starts with an UPDATE on the task row that is conditional on this attempt still
holding the lease; it allocates the batch's gap-free sequence numbers and updates the task's
aggregates. If another attempt took over, the UPDATE matches no row and the write is refused
with ``LeaseLost``.

A resumed attempt replays the run from the start; the first ``skip`` engine events were already
persisted by earlier attempts (identical, because LLM answers are replayed and environments are
deterministic), so they are not written again. Batches are atomic, so "events stored" is always
a prefix of the engine's event stream.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.events import (
    Event,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    StepAppended,
    TaskFinished,
)
from adapt.errors import LeaseLost
from adapt.store.models import EventRow, LLMCallRow, NodeRow, StepRow, Task, utcnow
from adapt.store.tasks import finished_values, record_batch
from adapt.store.text import storable

log = logging.getLogger(__name__)

MAX_BUFFER = 64  # write early if a flush is this long in coming


class _Batch:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.created: dict[int, dict[str, Any]] = {}  # nodes first seen in this batch
        self.updated: dict[int, dict[str, Any]] = {}  # latest snapshot of older nodes
        self.steps: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}


class DbSink:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        task_id: str,
        attempt: int,
        owner: str,
        *,
        skip: int = 0,
        store_prompts: bool = True,
    ) -> None:
        self.sessions = sessions
        self.task_id = task_id
        self.attempt = attempt
        self.owner = owner
        self.skip = skip
        self.store_prompts = store_prompts
        self.ordinal = 0
        self.cancel_requested = False
        self._batch = _Batch()

    async def emit(self, event: Event) -> None:
        self.ordinal += 1
        if self.ordinal <= self.skip:
            return
        self._add(event)
        # an answered call is written at once: a crash from here on does not pay for it again
        if isinstance(event, TaskFinished | LLMCallMade) or len(self._batch.events) >= MAX_BUFFER:
            await self.flush()

    def _add(self, event: Event) -> None:
        b, tid = self._batch, self.task_id
        payload = event.model_dump(mode="json", exclude={"type"})
        if isinstance(event, NodeCreated | NodeUpdated):
            row = {"task_id": tid, **event.node.model_dump(mode="json"), "updated_at": utcnow()}
            if isinstance(event, NodeCreated) or event.node.id in b.created:
                b.created[event.node.id] = row
            else:
                b.updated[event.node.id] = row
        elif isinstance(event, StepAppended):
            b.steps.append({"task_id": tid, **event.step.model_dump(mode="json")})
        elif isinstance(event, LLMCallMade):
            call = event.call
            if not self.store_prompts:
                call = call.model_copy(update={"prompt": None, "messages": None})
            # the prompt is stored once, with the call (GET /tasks/{id}/nodes/{node_id});
            # the event names the call instead of repeating it
            payload = {"call": call.model_copy(update={"prompt": None, "messages": None})
                       .model_dump(mode="json")}
            b.calls.append({
                "task_id": tid, "id": call.id, "node_id": call.node_id, "role": call.role,
                "model": call.model, "simulated": call.simulated, "prompt": call.prompt,
                "messages": call.messages or None, "stop": call.stop,
                "request_fingerprint": event.request_fingerprint,
                "response": (event.response.model_dump(mode="json")
                             if event.response is not None else {"text": call.completion}),
                "completion": call.completion, "prompt_tokens": call.prompt_tokens,
                "completion_tokens": call.completion_tokens,
                "usage_estimated": call.usage_estimated, "latency_s": call.latency_s,
                "cost_usd": call.cost_usd, "monitor": call.monitor, "retries": call.retries,
                "attempt": self.attempt,
                "created_at": utcnow(),
            })
        elif isinstance(event, TaskFinished):
            r = event.result
            payload = {"status": r.status, "result": r.model_dump(mode="json"), "error": r.error}
            b.values.update(finished_values(
                r.status, success=r.success, reward=r.reward, result=r.model_dump(mode="json"),
                error=r.error, max_depth=r.max_depth, resolved_goal=r.goal))
        b.events.append({"task_id": tid, "type": event.type, "payload": payload,
                         "ordinal": self.ordinal, "created_at": utcnow()})

    async def flush(self) -> None:
        b = self._batch
        if not b.events:
            return
        self._batch = _Batch()
        n = len(b.events)
        values: dict[str, Any] = {"updated_at": utcnow()}
        if b.created:
            values["nodes_count"] = Task.nodes_count + len(b.created)
        if b.calls:
            costs = [c["cost_usd"] for c in b.calls]
            values.update(
                llm_calls=Task.llm_calls + len(b.calls),
                prompt_tokens=Task.prompt_tokens + sum(c["prompt_tokens"] for c in b.calls),
                completion_tokens=Task.completion_tokens
                + sum(c["completion_tokens"] for c in b.calls),
                cost_usd=None if None in costs else Task.cost_usd + sum(costs),
            )
        values.update(b.values)
        # model output and observations may hold NUL: stored with U+FFFD instead
        values = storable(values)
        created, steps, calls, events = (storable(list(b.created.values())), storable(b.steps),
                                         storable(b.calls), storable(b.events))
        async with self.sessions.begin() as session:
            row = await record_batch(session, self.task_id, self.attempt, self.owner, n, values)
            if row is None:
                raise LeaseLost(f"task {self.task_id}: attempt {self.attempt} lost its lease")
            last, self.cancel_requested = row
            if created:
                await session.execute(insert(NodeRow), created)
            for node in storable(list(b.updated.values())):
                await session.execute(
                    update(NodeRow)
                    .where(NodeRow.task_id == self.task_id, NodeRow.id == node["id"])
                    .values({k: v for k, v in node.items() if k not in ("task_id", "id")})
                )
            if steps:
                await session.execute(insert(StepRow), steps)
            if calls:
                await session.execute(insert(LLMCallRow), calls)
            for offset, ev in enumerate(events):
                ev["seq"] = last - n + 1 + offset
            await session.execute(insert(EventRow), events)
