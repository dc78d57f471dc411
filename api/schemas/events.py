"""The event log's replies (``GET /tasks/{id}/events``, and the SSE stream's ``data``): one
model per event type, whose ``data`` is the engine's payload model for that type."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter

from adapt.engine.events import (
    ApprovalDecidedData,
    ApprovalRequestedData,
    CallData,
    FinishedData,
    NodeData,
    ResumedData,
    StepData,
)
from adapt.engine.tree import TaskStatus


class _Event(BaseModel):
    seq: int = Field(description="Per-task, gap-free, from 1.")
    created_at: datetime


class NodeEventPublic(_Event):
    type: Literal["node.created", "node.updated"]
    data: NodeData


class StepEventPublic(_Event):
    type: Literal["step"]
    data: StepData


class CallEventPublic(_Event):
    type: Literal["llm_call"]
    data: CallData = Field(description="The call; its prompt, messages and tools are null "
                           "(see the node detail).")


class FinishedEventPublic(_Event):
    type: Literal["task.finished"]
    data: FinishedData


class ResumedEventPublic(_Event):
    type: Literal["task.resumed"]
    data: ResumedData


class ApprovalRequestedEventPublic(_Event):
    type: Literal["approval.requested"]
    data: ApprovalRequestedData


class ApprovalDecidedEventPublic(_Event):
    type: Literal["approval.decided"]
    data: ApprovalDecidedData


EventPublic = Annotated[
    NodeEventPublic | StepEventPublic | CallEventPublic | FinishedEventPublic
    | ResumedEventPublic | ApprovalRequestedEventPublic | ApprovalDecidedEventPublic,
    Field(discriminator="type"),
]
EVENT = TypeAdapter(EventPublic)


class EventList(BaseModel):
    events: list[EventPublic]
    last_seq: int = Field(description="Seq of the last event returned (or `since` when none): "
                          "pass it as ?since= to continue.")
    finished: bool = Field(description="True when the task is finished and every event has "
                           "been returned (no need to poll again).")
    status: TaskStatus
