"""``/webhooks``: a tenant's webhook endpoints (every task's events), and
``/tasks/{id}/deliveries``: the delivery log of a task."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from adapt.service.submit import SubmissionInvalid, check_webhook
from adapt.store import queries
from adapt.store import webhooks as store
from adapt.store.models import WebhookEndpoint
from adapt.store.text import UNSTORABLE_MESSAGE, find_unstorable
from api.deps import SessionDep, SettingsDep, TenantDep
from api.problems import ProblemError, invalid_field, not_found
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


def _public(row: WebhookEndpoint, *, with_secret: bool = False) -> WebhookEndpointPublic:
    return WebhookEndpointPublic(id=row.id, url=row.url, events=list(row.events),
                                 description=row.description, created_at=row.created_at,
                                 secret=row.secret if with_secret else None)


@router.post("/webhooks", status_code=201, response_model=WebhookEndpointPublic,
             summary="Register a webhook endpoint for all of this tenant's tasks",
             description="Every task of the tenant started from now on sends the chosen events "
             "here, signed the Standard Webhooks way. The reply holds the signing secret; it is "
             "not shown again.", responses={
                 **PROBLEMS, 409: {"model": Problem, "description": "The tenant has as many "
                                   "endpoints as ADAPT_WEBHOOK_MAX_ENDPOINTS_PER_TENANT"}})
async def create_endpoint(body: WebhookEndpointCreate, response: Response,
                          session: SessionDep, tenant: TenantDep,
                          settings: SettingsDep) -> WebhookEndpointPublic:
    bad = find_unstorable(body.model_dump(mode="json", exclude_defaults=True), "")
    if bad:
        raise invalid_field(bad.lstrip("."), UNSTORABLE_MESSAGE)
    try:
        check_webhook("", body.url, body.events, settings)
    except SubmissionInvalid as exc:
        raise invalid_field(exc.field.lstrip("."), exc.message) from None
    limit = settings.webhook_max_endpoints_per_tenant
    row = store.new_endpoint(tenant, body.url, body.events, description=body.description)
    if not await store.add_endpoint(session, row, limit=limit):
        await session.rollback()
        raise ProblemError(
            409, f"this tenant has {limit} webhook endpoints, the most it may have "
            f"(ADAPT_WEBHOOK_MAX_ENDPOINTS_PER_TENANT = {limit}); delete one first "
            "(DELETE /webhooks/{id})", slug="webhook-endpoint-limit", title="Conflict",
            extra={"limit": limit})
    await session.commit()
    response.headers["Location"] = f"/webhooks/{row.id}"
    return _public(row, with_secret=True)


@router.get("/webhooks", response_model=WebhookEndpointList,
            summary="List this tenant's webhook endpoints (without secrets)",
            responses=PROBLEMS)
async def list_endpoints(session: SessionDep, tenant: TenantDep) -> WebhookEndpointList:
    return WebhookEndpointList(items=[_public(r) for r in
                                      await store.list_endpoints(session, tenant)])


@router.delete("/webhooks/{endpoint_id}", status_code=204, response_class=Response,
               summary="Delete a webhook endpoint (its pending deliveries are dropped)",
               responses=PROBLEMS)
async def delete_endpoint(endpoint_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    row = await store.get_endpoint(session, tenant, endpoint_id)
    if row is None:
        raise not_found("webhook endpoint", endpoint_id)
    await store.disable_endpoint(session, row)
    return Response(status_code=204)


@router.get("/tasks/{task_id}/deliveries", response_model=WebhookDeliveryList,
            summary="The webhook delivery log of a task, oldest first", responses=PROBLEMS)
async def task_deliveries(
    task_id: str, session: SessionDep, tenant: TenantDep,
    cursor: Annotated[str | None, Query(
        max_length=512, description="next_cursor of the previous page (opaque).")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
) -> WebhookDeliveryList:
    task = await queries.get_task(session, tenant, task_id)
    if task is None:
        raise not_found("task", task_id)
    try:
        after = queries.decode_cursor(cursor, start="the first delivery") if cursor else None
    except queries.InvalidCursor as exc:
        raise invalid_field("cursor", str(exc), location="query") from None
    rows = list(await store.for_task(session, task_id, limit=limit + 1, after=after))
    more = len(rows) > limit
    rows = rows[:limit]
    urls = {e.id: e.url for e in await store.endpoints_by_id(session, {r.endpoint_id
                                                                        for r in rows})}
    return WebhookDeliveryList(items=[WebhookDeliveryPublic(
        id=r.id, endpoint_id=r.endpoint_id, url=urls.get(r.endpoint_id, ""),
        event_type=r.event_type, payload=r.payload, status=r.status,
        attempts=r.attempts,
        next_attempt_at=r.next_attempt_at if r.status == "pending" else None,
        last_status_code=r.last_status_code, last_error=r.last_error,
        log=r.log or [],
        created_at=r.created_at, delivered_at=r.delivered_at) for r in rows],
        next_cursor=queries.encode_cursor(rows[-1].created_at, rows[-1].id) if more else None)
