"""``/webhooks``: a tenant's webhook endpoints (every task's events), and
``/tasks/{id}/deliveries``: the delivery log of a task."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from adapt.service.facade import Delivery, Webhook
from api.deps import TaskServiceDep
from api.schemas import (
    Problem,
    WebhookDeliveryList,
    WebhookDeliveryPublic,
    WebhookEndpointCreate,
    WebhookEndpointList,
    WebhookEndpointPublic,
)

router = APIRouter(tags=["webhooks"])

PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or invalid API key"},
    404: {"model": Problem, "description": "Unknown endpoint or task (or another tenant's)"},
    422: {"model": Problem, "description": "Invalid request; `errors` names each bad field"},
}


def _public(webhook: Webhook) -> WebhookEndpointPublic:
    return WebhookEndpointPublic(id=webhook.id, url=webhook.url, events=webhook.events,
                                 description=webhook.description,
                                 created_at=webhook.created_at, secret=webhook.secret)


@router.post("/webhooks", status_code=201, response_model=WebhookEndpointPublic,
             summary="Register a webhook endpoint for all of this tenant's tasks",
             description="Every task of the tenant started from now on sends the chosen events "
             "here, signed the Standard Webhooks way. The reply holds the signing secret; it is "
             "not shown again.", responses={
                 **PROBLEMS, 409: {"model": Problem, "description": "The tenant has as many "
                                   "endpoints as ADAPT_WEBHOOK_MAX_ENDPOINTS_PER_TENANT"}})
async def create_endpoint(body: WebhookEndpointCreate, response: Response,
                          service: TaskServiceDep) -> WebhookEndpointPublic:
    webhook = await service.add_webhook(body.url, body.events, body.description)
    response.headers["Location"] = f"/webhooks/{webhook.id}"
    return _public(webhook)


@router.get("/webhooks", response_model=WebhookEndpointList,
            summary="List this tenant's webhook endpoints (without secrets)",
            responses=PROBLEMS)
async def list_endpoints(service: TaskServiceDep) -> WebhookEndpointList:
    return WebhookEndpointList(items=[_public(w) for w in await service.webhooks()])


@router.delete("/webhooks/{endpoint_id}", status_code=204, response_class=Response,
               summary="Delete a webhook endpoint (its pending deliveries are dropped)",
               responses=PROBLEMS)
async def delete_endpoint(endpoint_id: str, service: TaskServiceDep) -> Response:
    await service.delete_webhook(endpoint_id)
    return Response(status_code=204)


@router.get("/tasks/{task_id}/deliveries", response_model=WebhookDeliveryList,
            summary="The webhook delivery log of a task, oldest first", responses=PROBLEMS)
async def task_deliveries(
    task_id: str, service: TaskServiceDep,
    cursor: Annotated[str | None, Query(
        max_length=512, description="next_cursor of the previous page (opaque).")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
) -> WebhookDeliveryList:
    deliveries, following = await service.deliveries(task_id, cursor=cursor, limit=limit)
    return WebhookDeliveryList(items=[_delivery(d) for d in deliveries], next_cursor=following)


def _delivery(delivery: Delivery) -> WebhookDeliveryPublic:
    r = delivery.row
    return WebhookDeliveryPublic(
        id=r.id, endpoint_id=r.endpoint_id, url=delivery.url,
        event_type=r.event_type, payload=r.payload, status=r.status,
        attempts=r.attempts,
        next_attempt_at=r.next_attempt_at if r.status == "pending" else None,
        last_status_code=r.last_status_code, last_error=r.last_error,
        log=r.log or [],
        created_at=r.created_at, delivered_at=r.delivered_at)
