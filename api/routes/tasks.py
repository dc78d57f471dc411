"""``/tasks``: create (idempotent), list, read, cancel and resume tasks."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Response
from fastapi.openapi.models import Example
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.tree import TaskStatus
from adapt.service.resume import NotResumable, resume_task
from adapt.service.submit import (
    IdempotencyConflict,
    RateLimited,
    Submission,
    SubmissionInvalid,
    WebhookRequest,
    cancel_task,
    request_hash,
    submit_task,
)
from adapt.store import queries
from adapt.store import webhooks as webhook_store
from adapt.store.models import WebhookEndpoint
from adapt.store.text import UNSTORABLE_MESSAGE, find_unstorable
from api.deps import DispatcherDep, SessionDep, SettingsDep, TenantDep
from api.problems import ProblemError, invalid_field, not_found
from api.schemas import (
    Problem,
    TaskCreate,
    TaskDetail,
    TaskList,
    TaskPublic,
    TaskWebhook,
)

log = logging.getLogger(__name__)

router = APIRouter(prefix="/tasks", tags=["tasks"])

PROBLEMS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or invalid API key"},
    404: {"model": Problem, "description": "Unknown task (or another tenant's)"},
    422: {"model": Problem, "description": "Invalid request; `errors` names each bad field"},
}

CREATE_EXAMPLES: dict[str, Example] = {
    "seed": Example(
        summary="TextCraft game from a seed",
        description="The simplest task: a generated TextCraft game, default models.",
        value={"environment": "textcraft", "environment_config": {"seed": 3}},
    ),
    "explicit": Example(
        summary="TextCraft with an explicit goal and commands, budget and models",
        value={
            "environment": "textcraft",
            "environment_config": {
                "goal": "craft polished granite stairs",
                "commands": [
                    "craft 4 polished granite stairs using 6 polished granite",
                    "craft 4 polished granite using 4 granite",
                    "craft 1 granite using 1 diorite, 1 quartz",
                    "craft 2 diorite using 2 quartz, 2 cobblestone",
                ],
            },
            "strategy": "adapt",
            "d_max": 4,
            "executor": {"model": "sim:textcraft?capability=1", "max_steps": 20,
                         "temperature": 0.0, "patience": 8},
            "planner": {"model": "sim:textcraft?capability=1"},
            "budget": {"max_llm_calls": 200, "max_tokens": 500000, "max_cost_usd": 1.0,
                       "deadline_seconds": 600, "max_nodes": 100},
        },
    ),
    "react": Example(
        summary="Executor-only baseline (react) with a local OpenAI-compatible server",
        value={"environment": "textcraft", "environment_config": {"seed": 7},
               "strategy": "react", "d_max": 3,
               "executor": {"model": "openai:llama3@http://127.0.0.1:11434/v1"}},
    ),
}


@router.post(
    "",
    status_code=202,
    response_model=TaskPublic,
    summary="Submit a task",
    description=(
        "Validates the environment, its config, the strategy and the model specs, stores a "
        "queued task and hands it to a worker. Returns **202** with the task and a "
        "`Location: /tasks/{id}` header.\n\n"
        "**Idempotency**: send an `Idempotency-Key` header to make retries safe. Repeating the "
        "same key with the same body (compared as canonical JSON after defaults are applied) "
        "returns the task created first with **200** and `Idempotent-Replayed: true`; the same "
        "key with a different body is **409**. Keys are per tenant."
    ),
    responses={
        **PROBLEMS,
        200: {"model": TaskPublic, "description": "Idempotent replay: the task created "
              "earlier with this Idempotency-Key"},
        409: {"model": Problem, "description": "Idempotency-Key reused with a different body"},
        429: {"model": Problem, "description": "Too many active tasks or submissions for this "
              "tenant; retry after `Retry-After` seconds",
              "headers": {"Retry-After": {"schema": {"type": "integer"},
                                          "description": "Seconds to wait"}}},
        413: {"model": Problem, "description": "Body larger than ADAPT_MAX_BODY_BYTES"},
    },
)
async def create_task(
    body: Annotated[TaskCreate, Body(openapi_examples=CREATE_EXAMPLES)],
    response: Response,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    dispatcher: DispatcherDep,
    idempotency_key: Annotated[str | None, Header(
        alias="Idempotency-Key", min_length=1, max_length=255,
        description="Any unique string (e.g. a UUID) identifying this request for retries.",
    )] = None,
) -> TaskPublic:
    bad = find_unstorable(body.model_dump(mode="json", exclude_defaults=True), "")
    if bad:
        raise invalid_field(bad.lstrip("."), UNSTORABLE_MESSAGE)
    sub = Submission(
        environment=body.environment, environment_config=body.environment_config,
        run_config=body.run_config(), goal=body.goal, executor_model=body.executor.model,
        planner_model=body.planner.model,
        webhook=WebhookRequest(body.webhook.url, tuple(body.webhook.events))
        if body.webhook is not None else None,
    )
    try:
        outcome = await submit_task(
            session, settings, tenant, sub, idempotency_key=idempotency_key,
            body_hash=request_hash(body.model_dump(mode="json")),
        )
    except SubmissionInvalid as exc:
        raise invalid_field(exc.field, exc.message) from None
    except RateLimited as exc:
        raise ProblemError(429, str(exc), slug="rate-limited",
                           headers={"Retry-After": str(exc.retry_after)}) from None
    except IdempotencyConflict as exc:
        raise ProblemError(409, str(exc), slug="idempotency-conflict",
                           extra={"task_id": exc.task_id}) from None
    task = outcome.task
    response.headers["Location"] = f"/tasks/{task.id}"
    if not outcome.created:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
    if outcome.created or task.status == "queued":
        try:
            await dispatcher.dispatch(task.id)
        except Exception:  # the task is stored; the worker's sweeper dispatches it later
            log.exception("dispatching task %s failed; it stays queued for the sweeper",
                          task.id)
    public = TaskPublic.model_validate(task)
    if outcome.webhook is not None:
        public.webhook = task_webhook(outcome.webhook, with_secret=True)
    elif not outcome.created:
        public.webhook = await _webhook_of(session, task.id)
    return public


def task_webhook(row: WebhookEndpoint, *, with_secret: bool = False) -> TaskWebhook:
    return TaskWebhook(id=row.id, url=row.url, events=list(row.events),
                       secret=row.secret if with_secret else None,
                       deliveries=f"/tasks/{row.task_id}/deliveries")


async def _webhook_of(session: AsyncSession, task_id: str) -> TaskWebhook | None:
    rows = await webhook_store.endpoints_of_task(session, task_id)
    return task_webhook(rows[0]) if rows else None


@router.get("", response_model=TaskList, summary="List tasks, newest first", responses=PROBLEMS)
async def list_tasks(
    session: SessionDep,
    tenant: TenantDep,
    status: Annotated[TaskStatus | None, Query(description="Only tasks in this status.")] = None,
    environment: Annotated[str | None, Query(max_length=128,
                                             description="Only tasks of this environment.")]
    = None,
    strategy: Annotated[str | None, Query(max_length=64,
                                          description="Only tasks run with this strategy.")]
    = None,
    cursor: Annotated[str | None, Query(
        max_length=512, description="next_cursor of the previous page (opaque).")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
) -> TaskList:
    try:
        page = await queries.list_tasks(session, tenant, status=status, environment=environment,
                                        strategy=strategy, cursor=cursor, limit=limit)
    except queries.InvalidCursor as exc:
        raise invalid_field("cursor", str(exc), location="query") from None
    return TaskList(items=[TaskPublic.model_validate(t) for t in page.items],
                    next_cursor=page.next_cursor)


@router.get("/{task_id}", response_model=TaskDetail, summary="Get a task", responses=PROBLEMS)
async def get_task(task_id: str, session: SessionDep, tenant: TenantDep) -> TaskDetail:
    task = await queries.get_task(session, tenant, task_id)
    if task is None:
        raise not_found("task", task_id)
    detail = TaskDetail.model_validate(task)
    detail.webhook = await _webhook_of(session, task.id)
    return detail


@router.post(
    "/{task_id}/cancel",
    response_model=TaskPublic,
    summary="Cancel a task (idempotent, cooperative)",
    description=(
        "A queued task is cancelled at once (status `cancelled`, a `task.finished` event). A "
        "running task gets `cancel_requested: true` and its worker stops at the next LLM call "
        "boundary. A finished task is returned unchanged. Always 200 with the task."
    ),
    responses=PROBLEMS,
)
async def cancel(task_id: str, session: SessionDep, tenant: TenantDep) -> TaskPublic:
    task = await queries.get_task(session, tenant, task_id)
    if task is None:
        raise not_found("task", task_id)
    return TaskPublic.model_validate(await cancel_task(session, task))


@router.post(
    "/{task_id}/resume",
    response_model=TaskPublic,
    status_code=202,
    summary="Resume a task an interruption stopped (idempotent)",
    description=(
        "A task that stopped with status `error` and no result (its provider stayed unreachable "
        "past the task's retry budget, or an internal failure) is queued again: the next "
        "attempt replays every recorded LLM call, so nothing already answered is paid again, "
        "and continues live. A queued or running task is returned unchanged. A task the engine "
        "finished (succeeded, failed, cancelled, budget exceeded, or an error with a result) "
        "is final: 409."
    ),
    responses={**PROBLEMS, 409: {"model": Problem, "description": "The task is final"}},
)
async def resume(task_id: str, session: SessionDep, tenant: TenantDep,
                 dispatcher: DispatcherDep) -> TaskPublic:
    task = await queries.get_task(session, tenant, task_id)
    if task is None:
        raise not_found("task", task_id)
    try:
        task, resumed = await resume_task(session, task)
    except NotResumable as exc:
        raise ProblemError(409, str(exc), slug="not-resumable", title="Conflict") from None
    if resumed:
        await dispatcher.dispatch(task.id)
    return TaskPublic.model_validate(task)
