"""``DbSink``: persists every engine event as it happens, one transaction per event.

Each transaction first renews nothing and checks everything: an UPDATE on the task row that is
conditional on this attempt still holding the lease allocates the event's sequence number (and
updates the task's aggregates). If another attempt took over, the UPDATE matches no row and the
write is refused with ``LeaseLost``.

A resumed attempt replays the run from the start; the first ``skip`` engine events were already
persisted by earlier attempts (they are identical, because LLM answers are replayed and
environments are deterministic), so they are not written again.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from sqlalchemy import update
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
from adapt.llm.base import ChatRequest, ChatResponse
from adapt.llm.recording import RecordedCall, request_fingerprint
from adapt.store.models import EventRow, LLMCallRow, NodeRow, StepRow, Task, utcnow

log = logging.getLogger(__name__)


class CallStash:
    """Receives (request, response) pairs from ``RecordingModel`` so the sink can persist the
    response and request fingerprint that replay needs next to the engine's LLM-call record."""

    def __init__(self) -> None:
        self.pending: deque[tuple[ChatRequest | None, ChatResponse]] = deque()

    def __call__(self, call: RecordedCall) -> None:
        self.pending.append((call.request, call.response))

    def pop(self) -> tuple[ChatRequest | None, ChatResponse | None]:
        return self.pending.popleft() if self.pending else (None, None)


class DbSink:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        task_id: str,
        attempt: int,
        owner: str,
        *,
        stash: CallStash,
        skip: int = 0,
        store_prompts: bool = True,
    ) -> None:
        self.sessions = sessions
        self.task_id = task_id
        self.attempt = attempt
        self.owner = owner
        self.stash = stash
        self.skip = skip
        self.store_prompts = store_prompts
        self.ordinal = 0
        self.cancel_requested = False

    async def emit(self, event: Event) -> None:
        self.ordinal += 1
        request, response = self.stash.pop() if isinstance(event, LLMCallMade) else (None, None)
        if self.ordinal <= self.skip:
            return
        values: dict[str, Any] = {"last_seq": Task.last_seq + 1, "updated_at": utcnow()}
        rows: list[Any] = []
        payload = event.model_dump(mode="json", exclude={"type"})
        if isinstance(event, NodeCreated | NodeUpdated):
            rows.append(NodeRow(task_id=self.task_id, **event.node.model_dump(mode="json")))
            if isinstance(event, NodeCreated):
                values["nodes_count"] = Task.nodes_count + 1
        elif isinstance(event, StepAppended):
            rows.append(StepRow(task_id=self.task_id, **event.step.model_dump(mode="json")))
        elif isinstance(event, LLMCallMade):
            call = event.call
            if not self.store_prompts:
                call = call.model_copy(update={"prompt": None, "messages": None})
                payload = {"call": call.model_dump(mode="json")}
            fingerprint = request_fingerprint(request) if request is not None else ""
            rows.append(LLMCallRow(
                task_id=self.task_id, id=call.id, node_id=call.node_id, role=call.role,
                model=call.model, simulated=call.simulated, prompt=call.prompt,
                messages={"messages": call.messages} if call.messages else None,
                stop={"stop": call.stop}, request_fingerprint=fingerprint,
                response=(response.model_dump(mode="json") if response is not None
                          else {"text": call.completion}),
                completion=call.completion, prompt_tokens=call.prompt_tokens,
                completion_tokens=call.completion_tokens, usage_estimated=call.usage_estimated,
                latency_s=call.latency_s, cost_usd=call.cost_usd, attempt=self.attempt,
            ))
            values.update(
                llm_calls=Task.llm_calls + 1,
                prompt_tokens=Task.prompt_tokens + call.prompt_tokens,
                completion_tokens=Task.completion_tokens + call.completion_tokens,
                cost_usd=(None if call.cost_usd is None else Task.cost_usd + call.cost_usd),
            )
        elif isinstance(event, TaskFinished):
            r = event.result
            payload = {"status": r.status, "result": r.model_dump(mode="json"), "error": r.error}
            values.update(
                status=r.status, success=r.success, reward=r.reward,
                result=r.model_dump(mode="json"), error=r.error, max_depth=r.max_depth,
                resolved_goal=r.goal,
                finished_at=utcnow(), lease_owner=None, lease_expires_at=None,
                # usage is authoritative from the engine (covers replayed calls too)
                llm_calls=r.usage.llm_calls, prompt_tokens=r.usage.prompt_tokens,
                completion_tokens=r.usage.completion_tokens, cost_usd=r.usage.cost_usd,
                nodes_count=r.nodes,
            )
        async with self.sessions.begin() as session:
            stmt = (
                update(Task)
                .where(Task.id == self.task_id, Task.attempt == self.attempt,
                       Task.lease_owner == self.owner)
                .values(**values)
                .returning(Task.last_seq, Task.cancel_requested)
            )
            row = (await session.execute(stmt)).one_or_none()
            if row is None:
                raise LeaseLost(f"task {self.task_id}: attempt {self.attempt} lost its lease")
            seq, self.cancel_requested = int(row[0]), bool(row[1])
            for obj in rows:
                await session.merge(obj)
            session.add(EventRow(task_id=self.task_id, seq=seq, type=event.type,
                                 payload=payload, ordinal=self.ordinal))
