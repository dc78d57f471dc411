"""Test helpers: write rows the way the worker does (a tiny test-only sink around the real
engine, or synthetic trees), count rows, parse SSE streams."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import RunConfig, run_task
from adapt.engine.events import (
    Event,
    LLMCallMade,
    NodeCreated,
    NodeUpdated,
    StepAppended,
    TaskFinished,
)
from adapt.envs.textcraft import TextCraft
from adapt.sim import from_spec
from adapt.store.models import LLMCallRow, NodeRow, StepRow, Task, utcnow
from adapt.store.task_rows import append_event

SIM = "sim:textcraft?capability=1"


def sessions_of(app: FastAPI) -> async_sessionmaker[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = app.state.sessions
    return sessions


async def count_rows(app: FastAPI, model: Any = Task) -> int:
    async with sessions_of(app)() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def set_task(app: FastAPI, task_id: str, **values: Any) -> None:
    async with sessions_of(app).begin() as session:
        await session.execute(update(Task).where(Task.id == task_id).values(**values))


async def start_task(app: FastAPI, task_id: str) -> None:
    """What a worker's claim does."""
    now = utcnow()
    await set_task(app, task_id, status="running", attempt=Task.attempt + 1, started_at=now,
                   lease_owner="test", updated_at=now)


class RowSink:
    """Persists engine events as the production sink does (one transaction per event)."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], task_id: str) -> None:
        self.sessions = sessions
        self.task_id = task_id
        self.ordinal = 0

    async def emit(self, event: Event) -> None:
        self.ordinal += 1
        payload = event.model_dump(mode="json", exclude={"type"})
        if isinstance(event, TaskFinished):
            r = event.result
            payload = {"status": r.status, "result": r.model_dump(mode="json"), "error": r.error}
        async with self.sessions.begin() as session:
            await append_event(session, self.task_id, event.type, payload, ordinal=self.ordinal)
            if isinstance(event, NodeCreated | NodeUpdated):
                await session.merge(NodeRow(task_id=self.task_id,
                                            **event.node.model_dump(mode="json")))
                if isinstance(event, NodeCreated):
                    await session.execute(update(Task).where(Task.id == self.task_id)
                                          .values(nodes_count=Task.nodes_count + 1))
            elif isinstance(event, StepAppended):
                session.add(StepRow(task_id=self.task_id, **event.step.model_dump(mode="json")))
            elif isinstance(event, LLMCallMade):
                c = event.call
                session.add(LLMCallRow(
                    task_id=self.task_id, id=c.id, node_id=c.node_id, role=c.role,
                    model=c.model, simulated=c.simulated, prompt=c.prompt,
                    messages=c.messages or None,
                    stop=c.stop, request_fingerprint="", response={"text": c.completion},
                    completion=c.completion, prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens, usage_estimated=c.usage_estimated,
                    latency_s=c.latency_s, cost_usd=c.cost_usd, monitor=c.monitor, attempt=1,
                ))
                await session.execute(update(Task).where(Task.id == self.task_id).values(
                    llm_calls=Task.llm_calls + 1,
                    prompt_tokens=Task.prompt_tokens + c.prompt_tokens,
                    completion_tokens=Task.completion_tokens + c.completion_tokens,
                ))
            elif isinstance(event, TaskFinished):
                r = event.result
                await session.execute(update(Task).where(Task.id == self.task_id).values(
                    status=r.status, success=r.success, reward=r.reward,
                    result=r.model_dump(mode="json"), error=r.error, max_depth=r.max_depth,
                    resolved_goal=r.goal, finished_at=utcnow(), lease_owner=None,
                    cost_usd=r.usage.cost_usd,
                ))


async def run_engine(app: FastAPI, task_id: str, *, config: dict[str, Any] | None = None,
                     d_max: int = 3, spec: str = SIM) -> None:
    """Run the real engine on TextCraft for ``task_id``, persisting like the worker."""
    await start_task(app, task_id)
    model = from_spec(spec)
    await run_task(TextCraft(), config or {"seed": 3}, RunConfig(d_max=d_max), model,
                   sink=RowSink(sessions_of(app), task_id))


async def insert_tree(app: FastAPI, task_id: str, size: int) -> None:
    """A synthetic tree of ``size`` nodes (a root, then a binary fan-out), with events."""
    async with sessions_of(app).begin() as session:
        for node_id in range(1, size + 1):
            parent = None if node_id == 1 else node_id // 2
            row = NodeRow(
                task_id=task_id, id=node_id, parent_id=parent, position=node_id % 2,
                depth=1 if parent is None else len(bin(node_id)) - 2, kind="task",
                goal=f"goal {node_id}", logic="and" if node_id * 2 <= size else None,
                status="succeeded", executor_success=node_id * 2 > size, success=True,
                steps_count=0, usage={"llm_calls": 1, "prompt_tokens": 10,
                                      "completion_tokens": 2, "cost_usd": None},
            )
            session.add(row)
            await append_event(session, task_id, "node.created",
                               {"node": {"id": node_id}}, ordinal=node_id)
        await session.execute(update(Task).where(Task.id == task_id).values(nodes_count=size))


async def create(client: httpx.AsyncClient, body: dict[str, Any] | None = None,
                 **kwargs: Any) -> dict[str, Any]:
    response = await client.post("/tasks", json=body or {"environment": "textcraft",
                                                          "environment_config": {"seed": 3}},
                                 **kwargs)
    assert response.status_code == 202, response.text
    data: dict[str, Any] = response.json()
    return data


@dataclass
class SSEEvent:
    id: str | None
    event: str | None
    data: str | None

    def json(self) -> Any:
        return json.loads(self.data or "null")


def parse_sse(text: str) -> tuple[list[SSEEvent], list[str]]:
    """(events, comments) of an SSE body; ``retry:``-only blocks are skipped."""
    events: list[SSEEvent] = []
    comments: list[str] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                comments.append(line[1:].strip())
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            fields[name] = fields[name] + "\n" + value if name in fields else value
        if "data" in fields or "event" in fields:
            events.append(SSEEvent(fields.get("id"), fields.get("event"), fields.get("data")))
    return events, comments
