"""``/tasks``: create (idempotent), list, read, cancel, resume, delete, export and import
tasks."""

from __future__ import annotations

import logging
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import APIRouter, Body, Header, Query, Response
from fastapi.openapi.models import Example

from adapt.service.facade import TaskStatus, TaskView, Webhook
from adapt.service.submit import ModelRequest, Submission, WebhookRequest
from api.deps import TaskServiceDep
from api.schemas import (
    ForkCreate,
    Problem,
    TaskCreate,
    TaskDetail,
    TaskList,
    TaskPublic,
    TaskWebhook,
)

log = logging.getLogger(__name__)

router = APIRouter(prefix="/tasks", tags=["tasks"])

P = TypeVar("P", bound=TaskPublic)

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
    service: TaskServiceDep,
    idempotency_key: Annotated[str | None, Header(
        alias="Idempotency-Key", min_length=1, max_length=255,
        description="Any unique string (e.g. a UUID) identifying this request for retries.",
    )] = None,
) -> TaskPublic:
    sub = Submission(
        environment=body.environment, environment_config=body.environment_config,
        run_config=body.run_config(), goal=body.goal,
        models=ModelRequest(executor=body.executor.model, cascade=tuple(body.executor.models),
                            planner=body.planner.model),
        webhook=WebhookRequest(body.webhook.url, tuple(body.webhook.events))
        if body.webhook is not None else None,
    )
    # what an Idempotency-Key compares: the fields sent that differ from their defaults, so
    # a field added in a later release (with its default) leaves a retry's hash as it was
    request = body.model_dump(mode="json", exclude_defaults=True)
    view = await service.submit(sub, request, idempotency_key=idempotency_key)
    response.headers["Location"] = f"/tasks/{view.task.id}"
    if not view.created:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
    return public(view, TaskPublic)


def task_webhook(webhook: Webhook, task_id: str) -> TaskWebhook:
    return TaskWebhook(id=webhook.id, url=webhook.url, events=webhook.events,
                       secret=webhook.secret, deliveries=f"/tasks/{task_id}/deliveries")


def public(view: TaskView, schema: type[P]) -> P:
    out = schema.model_validate(view.task)
    if view.webhook is not None:
        out.webhook = task_webhook(view.webhook, view.task.id)
    return out


@router.post(
    "/import",
    status_code=201,
    response_model=TaskPublic,
    summary="Load a task archive as a new task of the caller's tenant",
    description=(
        "The body is an archive that `GET /tasks/{id}/export` returned (on this deployment or "
        "another): the task is stored under a new id and the caller's tenant, with the same "
        "tree, steps, events and LLM calls (a resumed run replays them without paying for "
        "them). **201** with the task and `Location`. The archive is checked before anything "
        "is stored: an unknown `format` or `schema_version`, a row that does not fit its "
        "table, an unfinished task, a reference to a row or prompt block the archive lacks, or "
        "a block whose hash does not match its text is a **422** naming the field; a body "
        "larger than `ADAPT_MAX_BODY_BYTES` is a **413**."
    ),
    responses={**PROBLEMS, 413: {"model": Problem, "description": "Archive larger than "
                                 "ADAPT_MAX_BODY_BYTES"}},
)
async def import_task(
    document: Annotated[dict[str, Any], Body(description="A task archive (`GET "
                                             "/tasks/{id}/export`).")],
    response: Response,
    service: TaskServiceDep,
) -> TaskPublic:
    task = await service.import_archive(document)
    response.headers["Location"] = f"/tasks/{task.id}"
    return TaskPublic.model_validate(task)


@router.get("", response_model=TaskList, summary="List tasks, newest first", responses=PROBLEMS)
async def list_tasks(
    service: TaskServiceDep,
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
    id_prefix: Annotated[str | None, Query(
        min_length=1, max_length=32, pattern="^[0-9a-f]+$",
        description="Only tasks whose id starts with these hex digits (a short id as the "
        "viewer shows it).")] = None,
) -> TaskList:
    page = await service.list_tasks(status=status, environment=environment, strategy=strategy,
                                    cursor=cursor, limit=limit, id_prefix=id_prefix)
    return TaskList(items=[TaskPublic.model_validate(t) for t in page.items],
                    next_cursor=page.next_cursor)


@router.get("/{task_id}", response_model=TaskDetail, summary="Get a task", responses=PROBLEMS)
async def get_task(task_id: str, service: TaskServiceDep) -> TaskDetail:
    return public(await service.get(task_id), TaskDetail)


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
async def cancel(task_id: str, service: TaskServiceDep) -> TaskPublic:
    return TaskPublic.model_validate(await service.cancel(task_id))


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
async def resume(task_id: str, service: TaskServiceDep) -> TaskPublic:
    return TaskPublic.model_validate(await service.resume(task_id))


@router.delete(
    "/{task_id}",
    status_code=204,
    summary="Delete a finished task and everything stored of it",
    description=(
        "Deletes the task with its nodes, steps, LLM calls, events, webhook deliveries and its "
        "own webhook endpoint, and the stored prompt text no other task uses. Only a finished "
        "task can be deleted: a queued or running one is **409** (`task-active`); cancel it "
        "first (`POST /tasks/{id}/cancel`) and delete it once it has finished. **204** when "
        "deleted; deleting it again is a 404."
    ),
    responses={**PROBLEMS, 409: {"model": Problem, "description": "The task is queued or "
                                 "running: cancel it first"}},
)
async def delete_task(task_id: str, service: TaskServiceDep) -> Response:
    # (a rendered tree the API cached stays unreachable: every read looks the task up first)
    await service.delete(task_id)
    return Response(status_code=204)


@router.get(
    "/{task_id}/export",
    summary="The task as one self-contained JSON document (an archive)",
    description=(
        "A finished task with everything stored of it: the task, its nodes, steps, LLM calls "
        "(with the request fingerprints and responses replay needs, and their prompts as "
        "content-addressed blocks), events, approval requests with their decisions, and "
        "`schema_version`. `POST /tasks/import` loads "
        "it into this or another deployment. A queued or running task is **409** "
        "(`task-active`)."
    ),
    responses={**PROBLEMS, 200: {"description": "The archive", "content": {
        "application/json": {"schema": {"type": "object"}}}},
        409: {"model": Problem, "description": "The task is queued or running"}},
    response_class=Response,
)
async def export_task(task_id: str, service: TaskServiceDep) -> Response:
    document = await service.export(task_id)
    return Response(orjson.dumps(document), media_type="application/json", headers={
        "Content-Disposition": f'attachment; filename="task-{task_id}.json"'})


@router.post(
    "/{task_id}/fork",
    status_code=202,
    response_model=TaskPublic,
    summary="Fork a finished task at one of its nodes, with other settings",
    description=(
        "A new task with the origin's environment, config and goal, and its run config with "
        "`overrides` over it (checked like a submission). Its history up to the node is "
        "replayed from the origin's recorded calls (none is paid again; the environment is "
        "rebuilt by replaying the actions), then it runs live. It carries `forked_from: "
        "{task_id, node_id}`. **202** with the task and `Location`. A task that has not "
        "finished is **409**, as is a fork whose environment cannot be rebuilt at the node "
        "(`not-forkable`: an MCP server without a workspace that the task acted on there or "
        "later, or another fork of the same task still running); a node it does not have, or "
        "a bad override, **422** naming the field (`node_id`, `overrides.d_max`, ...)."
    ),
    responses={**PROBLEMS, 409: {"model": Problem, "description": "The task has not "
                                 "finished, or its environment cannot be rebuilt at the node"}},
)
async def fork(task_id: str, body: ForkCreate, response: Response,
               service: TaskServiceDep) -> TaskPublic:
    task = await service.fork(task_id, body.node_id, body.overrides)
    response.headers["Location"] = f"/tasks/{task.id}"
    return TaskPublic.model_validate(task)
