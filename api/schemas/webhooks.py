"""The webhook family: a task's ``WebhookSubscription``, the tenant's endpoints
(``WebhookEndpointCreate`` / ``...Public`` / ``...List``) and their delivery log."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from api.schemas.common import STRICT

WebhookEvent = Literal["task.finished", "node.finished", "approval.requested"]


class WebhookSubscription(BaseModel):
    """Where to send a task's events (signed; see docs/webhooks.md)."""

    model_config = STRICT

    url: str = Field(min_length=1, max_length=2000, examples=["https://example.com/hooks/adapt"],
                     description="http(s) URL on a public address (the operator may allow "
                     "private networks: ADAPT_WEBHOOK_ALLOWED_NETWORKS).")
    events: list[WebhookEvent] = Field(
        default_factory=lambda: list[WebhookEvent](["task.finished"]), min_length=1,
        max_length=3, description="task.finished (once, when the task ends), "
        "node.finished (each node of the tree as it ends) and/or approval.requested (the "
        "task waits for a person's decision; docs/approvals.md).")


class WebhookEndpointCreate(WebhookSubscription):
    description: str | None = Field(default=None, max_length=255)


class WebhookEndpointPublic(BaseModel):
    id: str
    url: str
    events: list[str]
    description: str | None
    created_at: datetime
    secret: str | None = Field(default=None, description="The signing secret (whsec_...): in "
                               "the reply that created the endpoint only.")


class WebhookEndpointList(BaseModel):
    items: list[WebhookEndpointPublic]


class DeliveryAttempt(BaseModel):
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int


class WebhookDeliveryPublic(BaseModel):
    id: str = Field(description="The webhook-id header of every attempt.")
    endpoint_id: str
    url: str
    event_type: str
    payload: dict[str, Any] = Field(description="The body sent.")
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: datetime | None = Field(description="When a pending delivery is tried "
                                             "next.")
    last_status_code: int | None
    last_error: str | None
    log: list[DeliveryAttempt] = Field(description="The latest attempts, oldest first.")
    created_at: datetime
    delivered_at: datetime | None


class WebhookDeliveryList(BaseModel):
    items: list[WebhookDeliveryPublic]
    next_cursor: str | None = Field(
        default=None, description="Pass as ?cursor= to get the next (newer) page; null on the "
        "last page.")
