"""The API's one way into the service: :class:`TaskService`, what a tenant does with its tasks
(submit, list, read, cancel, resume, delete, export and import; the tree, a node, the event
log, webhook deliveries) and its webhook endpoints.

A route builds one for the request (its database session, the caller's tenant, the settings,
the dispatcher), calls one method and validates its response schema from the plain result:
rows read with ``model_validate`` (the FastAPI full-stack template's ``crud.py`` shape), or the
small dataclasses below. Every refusal is a :class:`~adapt.service.errors.ClientError` that
carries its HTTP status and problem type; an unknown task, or another tenant's, is
:class:`~adapt.service.errors.NotFound`.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.approvals import DecisionKind
from adapt.engine.tree import TaskStatus as TaskStatus
from adapt.errors import InvalidCursor
from adapt.service import approvals as approval_service
from adapt.service import archive, remote_envs
from adapt.service.dispatch import Dispatcher
from adapt.service.errors import (
    EndpointLimit,
    InvalidField,
    NotFound,
    SubmissionInvalid,
    TaskActive,
)
from adapt.service.fork import fork_task
from adapt.service.resume import resume_task
from adapt.service.retention import delete_tasks
from adapt.service.submit import Submission, cancel_task, check_webhook, request_hash, submit_task
from adapt.settings import Settings
from adapt.store import approvals as approval_store
from adapt.store import queries
from adapt.store import webhooks as webhook_store
from adapt.store.event_log import StoredEvent, read_events
from adapt.store.models import (
    ApprovalRow,
    LLMCallRow,
    NodeRow,
    StepRow,
    Task,
    WebhookDelivery,
    WebhookEndpoint,
)
from adapt.store.prompts import StoredPrompt, call_prompts
from adapt.store.text import UNSTORABLE_MESSAGE, find_unstorable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Webhook:
    """A webhook endpoint; ``secret`` only in the answer that registered it."""

    id: str
    url: str
    events: list[str]
    created_at: datetime
    description: str | None = None
    secret: str | None = None

    @classmethod
    def of(cls, row: WebhookEndpoint, *, with_secret: bool = False) -> Webhook:
        return cls(id=row.id, url=row.url, events=list(row.events), created_at=row.created_at,
                   description=row.description, secret=row.secret if with_secret else None)


@dataclass(frozen=True)
class TaskView:
    """A task row and its own webhook endpoint (None: it has none, or the answer omits it)."""

    task: Task
    webhook: Webhook | None = None
    #: False: an idempotent replay returned the task created earlier
    created: bool = True


@dataclass(frozen=True)
class Page:
    items: list[Task]
    next_cursor: str | None


@dataclass(frozen=True)
class NodeView:
    """One node with its children's ids, its steps and its LLM calls (with their prompts)."""

    node: NodeRow
    children: list[int]
    steps: Sequence[StepRow]
    calls: Sequence[LLMCallRow]
    prompts: Mapping[int, StoredPrompt]


@dataclass(frozen=True)
class EventPage:
    events: list[StoredEvent]
    #: the seq to pass as the next ``since``
    last_seq: int
    #: the task is finished and nothing is left to fetch
    finished: bool


@dataclass(frozen=True)
class Delivery:
    row: WebhookDelivery
    url: str


def nest(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Nest plain node dicts (ordered by parent, position, id) under the root."""
    by_id = {n["id"]: n for n in nodes}
    roots: list[dict[str, Any]] = []
    for node in nodes:
        parent = by_id.get(node["parent_id"]) if node["parent_id"] is not None else None
        if parent is None:
            roots.append(node)
        else:
            parent["children"].append(node)
    if not roots:
        return None
    roots.sort(key=lambda n: n["id"])
    if len(roots) > 1:
        log.warning("task tree has %d parentless nodes (%s); showing node %d as the root",
                    len(roots), [n["id"] for n in roots], roots[0]["id"])
    return roots[0]


class TaskService:
    """What the API does for one request of ``tenant``, in ``session``."""

    def __init__(self, session: AsyncSession, settings: Settings, tenant: str,
                 dispatcher: Dispatcher, *, key_id: str | None = None) -> None:
        self.session = session
        self.settings = settings
        self.tenant = tenant
        self.dispatcher = dispatcher
        #: the caller's API key (None: the API runs open)
        self.key_id = key_id

    async def close(self) -> None:
        """Hand the request's database connection back now (a stream that follows polls
        with short sessions of its own)."""
        await self.session.close()

    # -- tasks ----------------------------------------------------------------------------
    async def submit(self, sub: Submission, request: Mapping[str, Any], *,
                     idempotency_key: str | None = None) -> TaskView:
        """Validate and store a queued task and dispatch it. ``request`` is the request's
        JSON document (its hash identifies a retry under ``idempotency_key``)."""
        bad = find_unstorable(request, "")
        if bad:
            raise SubmissionInvalid(bad.lstrip("."), UNSTORABLE_MESSAGE)
        await remote_envs.ready(sub.environment)  # a remote one's class, off the loop
        outcome = await submit_task(self.session, self.settings, self.tenant, sub,
                                    idempotency_key=idempotency_key,
                                    body_hash=request_hash(request))
        task = outcome.task
        if outcome.created or task.status == "queued":
            try:
                await self.dispatcher.dispatch(task.id)
            except Exception:  # the task is stored; the worker's sweeper dispatches it later
                log.exception("dispatching task %s failed; it stays queued for the sweeper",
                              task.id)
        if outcome.webhook is not None:
            webhook: Webhook | None = Webhook.of(outcome.webhook, with_secret=True)
        elif not outcome.created:
            webhook = await self._webhook_of(task.id)
        else:
            webhook = None
        return TaskView(task, webhook, created=outcome.created)

    async def list_tasks(self, *, status: TaskStatus | None = None, environment: str | None = None,
                   strategy: str | None = None, cursor: str | None = None,
                   limit: int = 20, id_prefix: str | None = None) -> Page:
        try:
            page = await queries.list_tasks(self.session, self.tenant, status=status,
                                            environment=environment, strategy=strategy,
                                            cursor=cursor, limit=limit, id_prefix=id_prefix)
        except InvalidCursor as exc:
            raise InvalidField("cursor", str(exc), location="query") from None
        return Page(page.items, page.next_cursor)

    async def task(self, task_id: str) -> Task:
        task = await queries.get_task(self.session, self.tenant, task_id)
        if task is None:
            raise NotFound("task", task_id)
        return task

    async def get(self, task_id: str) -> TaskView:
        """The task with its own webhook endpoint."""
        task = await self.task(task_id)
        return TaskView(task, await self._webhook_of(task.id))

    async def _webhook_of(self, task_id: str) -> Webhook | None:
        rows = await webhook_store.endpoints_of_task(self.session, task_id)
        return Webhook.of(rows[0]) if rows else None

    async def cancel(self, task_id: str) -> Task:
        """Request cancellation (idempotent; see :func:`adapt.service.submit.cancel_task`)."""
        return await cancel_task(self.session, await self.task(task_id))

    async def delete(self, task_id: str) -> Task:
        """Delete a finished task with everything stored of it (its rows, and the prompt
        blocks no other call uses: :mod:`adapt.service.retention`); returns the row as it was.
        ``TaskActive`` while it is queued or running."""
        task = await self.task(task_id)
        if not task.finished:
            raise TaskActive(task.id, task.status, "deleted")
        done = await delete_tasks(self.session, [task.id], tenant=self.tenant)
        if not done.tasks:  # resumed between the read and the delete
            raise TaskActive(task.id, "queued", "deleted")
        return task

    async def export(self, task_id: str) -> dict[str, Any]:
        """The task's archive (:mod:`adapt.service.archive`); ``TaskActive`` while it is
        queued or running."""
        task = await self.task(task_id)
        if not task.finished:
            raise TaskActive(task.id, task.status, "exported")
        return await archive.export_task(self.session, task)

    async def import_archive(self, document: Any) -> Task:
        """Store an archive as a new task of this tenant; ``InvalidField`` names what is wrong
        with it."""
        return await archive.import_task(self.session, document, self.tenant)

    async def resume(self, task_id: str) -> Task:
        """Queue a task an interruption stopped again, and dispatch it (see
        :func:`adapt.service.resume.resume_task`; ``NotResumable`` when it is final)."""
        task, resumed = await resume_task(self.session, await self.task(task_id))
        if resumed:
            await self.dispatcher.dispatch(task.id)
        return task

    async def fork(self, task_id: str, node_id: int, overrides: Mapping[str, Any]) -> Task:
        """A fork of a finished task at ``node_id`` (:mod:`adapt.service.fork`), queued and
        dispatched."""
        source = await self.task(task_id)
        outcome = await fork_task(self.session, self.settings, self.tenant, source, node_id,
                                  overrides)
        try:
            await self.dispatcher.dispatch(outcome.task.id)
        except Exception:  # stored: the worker's sweeper dispatches it later
            log.exception("dispatching task %s failed; it stays queued for the sweeper",
                          outcome.task.id)
        return outcome.task

    # -- approvals ------------------------------------------------------------------------
    async def approvals(self, task_id: str, *, status: str | None = None
                        ) -> Sequence[ApprovalRow]:
        """``task_id``'s approval requests, oldest first (``status``: only those)."""
        task = await self.task(task_id)
        return await approval_store.for_task(self.session, task.id, status=status)

    async def decide(self, task_id: str, approval_id: str, decision: DecisionKind, *,
                     reason: str | None = None, proposal: Any = None) -> ApprovalRow:
        """Decide one request (:func:`adapt.service.approvals.decide`); a task with nothing
        else waiting is queued again and dispatched."""
        task = await self.task(task_id)
        row, woken = await approval_service.decide(
            self.session, task, approval_id, decision, reason=reason, proposal=proposal,
            decided_by=self.key_id, tenant=self.tenant)
        if woken:
            try:
                await self.dispatcher.dispatch(task.id)
            except Exception:  # queued: the worker's sweeper dispatches it later
                log.exception("dispatching task %s failed; it stays queued for the sweeper",
                              task.id)
        return row

    # -- the tree -------------------------------------------------------------------------
    async def tree(self, task: Task) -> dict[str, Any]:
        """``task``'s tree document (``TaskTree``'s fields; ``tree``: the root as nested plain
        dicts, each with its ``children``): one query for the tree's columns, no pydantic
        model per node. The collector is paused while the thousands of short-lived dicts are
        built (nothing else runs meanwhile: there is no await)."""
        rows = await queries.tree_rows(self.session, task.id)
        paused = gc.isenabled()
        gc.disable()
        try:
            nodes = queries.tree_dicts(rows)
            return {
                "task_id": task.id, "status": task.status, "finished": task.finished,
                "success": task.success, "reward": task.reward, "last_seq": task.last_seq,
                "nodes_count": len(nodes), "tree": nest(nodes),
            }
        finally:
            if paused:
                gc.enable()

    async def node(self, task_id: str, node_id: int) -> NodeView:
        task = await self.task(task_id)
        node = await queries.get_node(self.session, task.id, node_id)
        if node is None:
            raise NotFound("node", f"{node_id} of task {task.id}")
        steps = await queries.node_steps(self.session, task.id, node_id)
        calls = await queries.node_calls(self.session, task.id, node_id)
        prompts = await call_prompts(self.session, task.id, [c.id for c in calls])
        children = await queries.child_ids(self.session, task.id, node_id)
        return NodeView(node, children, steps, calls, prompts)

    # -- events ---------------------------------------------------------------------------
    async def events(self, task: Task, after: int, limit: int) -> EventPage:
        """At most ``limit`` events of ``task`` with ``seq > after``."""
        progress = queries.TaskProgress(task.status, task.last_seq)
        events = await read_events(self.session, task.id, after, limit)
        last = events[-1].seq if events else after
        return EventPage(events, last,
                         finished=progress.finished and last >= progress.last_seq)

    # -- webhooks -------------------------------------------------------------------------
    async def deliveries(self, task_id: str, *, cursor: str | None = None,
                         limit: int = 20) -> tuple[list[Delivery], str | None]:
        """A page of the webhook delivery log of a task, oldest first, each with its
        endpoint's URL, and the cursor of the next page (None: this is the last)."""
        task = await self.task(task_id)
        try:
            after = queries.decode_cursor(cursor, start="the first delivery") if cursor else None
        except InvalidCursor as exc:
            raise InvalidField("cursor", str(exc), location="query") from None
        rows = list(await webhook_store.for_task(self.session, task.id, limit=limit + 1,
                                                 after=after))
        more = len(rows) > limit
        rows = rows[:limit]
        urls = {e.id: e.url for e in await webhook_store.endpoints_by_id(
            self.session, {r.endpoint_id for r in rows})}
        following = queries.encode_cursor(rows[-1].created_at, rows[-1].id) if more else None
        return [Delivery(r, urls.get(r.endpoint_id, "")) for r in rows], following

    async def add_webhook(self, url: str, events: Sequence[str],
                          description: str | None = None) -> Webhook:
        """Register an endpoint for every task of the tenant (its answer holds the secret);
        ``EndpointLimit`` when the tenant has as many as the operator allows."""
        bad = find_unstorable({"url": url, "events": list(events),
                               "description": description}, "")
        if bad:
            raise InvalidField(bad.lstrip("."), UNSTORABLE_MESSAGE)
        check_webhook("", url, events, self.settings)
        limit = self.settings.webhook_max_endpoints_per_tenant
        row = webhook_store.new_endpoint(self.tenant, url, events, description=description)
        if not await webhook_store.add_endpoint(self.session, row, limit=limit):
            await self.session.rollback()
            raise EndpointLimit(limit)
        await self.session.commit()
        return Webhook.of(row, with_secret=True)

    async def webhooks(self) -> list[Webhook]:
        return [Webhook.of(r) for r in
                await webhook_store.list_endpoints(self.session, self.tenant)]

    async def delete_webhook(self, endpoint_id: str) -> None:
        row = await webhook_store.get_endpoint(self.session, self.tenant, endpoint_id)
        if row is None:
            raise NotFound("webhook endpoint", endpoint_id)
        await webhook_store.disable_endpoint(self.session, row)
