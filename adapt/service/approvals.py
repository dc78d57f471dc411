"""A person in the loop, in the service: a task that waits holds no worker.

- A worker's attempt gets a gate (:func:`gate_for`) that answers the engine's approval
  requests from the decisions stored so far. A request with no decision stops the attempt
  (``AwaitingApproval``; with ``approval.parallel_siblings`` several requests of sibling nodes
  at once); :func:`wait` then stores the requests, hands the lease back and sets
  the task ``waiting``, with an ``approval.requested`` event (and webhook deliveries), in one
  transaction. Nothing polls: the task is a row until someone decides.
- :func:`decide` (the API's ``POST /tasks/{id}/approvals/{approval_id}``) records the decision
  with who made it and what it changed, and, when nothing else of the task waits, queues the
  task again (the caller dispatches it). The next attempt replays the recorded calls (none is
  paid again) and finds the decision where the run asks again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine.approvals import (
    ApprovalConfig,
    ApprovalGate,
    ApprovalRequest,
    Decision,
    DecisionKind,
)
from adapt.engine.events import ApprovalDecidedData, ApprovalRequestedData
from adapt.engine.proposals import edited_action, edited_call, edited_plan, plan_proposal
from adapt.errors import InvalidProposal
from adapt.service.errors import InvalidField, NotDecidable, NotFound
from adapt.store import approvals as store
from adapt.store import task_rows
from adapt.store import webhooks as webhook_store
from adapt.store.models import ApprovalRow, Task, utcnow

log = logging.getLogger(__name__)


async def gate_for(sessions: async_sessionmaker[AsyncSession], task_id: str) -> ApprovalGate:
    """The gate of one attempt: the decisions stored when it starts."""
    decided = await store.decisions(sessions, task_id)

    async def gate(request: ApprovalRequest) -> Decision | None:
        return decided.get(request.key)

    return gate


def requested_data(task_id: str, row: ApprovalRow) -> dict[str, Any]:
    """The ``data`` of an ``approval.requested`` webhook."""
    return {"task_id": task_id, "approval_id": row.id, "node_id": row.node_id,
            "kind": row.kind, "proposal": row.proposal,
            "url": f"/tasks/{task_id}/approvals/{row.id}"}


async def wait(sessions: async_sessionmaker[AsyncSession], task: Task, attempt: int,
               owner: str, requests: Sequence[ApprovalRequest],
               wake: Callable[[], None] | None = None, *,
               timeout_seconds: float | None = None) -> str | None:
    """Store ``requests`` (each due in ``timeout_seconds``, if given: more than one when
    sibling nodes wait at the same time) and let ``task`` wait for them (``waiting``);
    ``None`` when this attempt lost its lease meanwhile, ``queued`` when one of them was
    decided meanwhile (the task is queued again at once)."""
    async with sessions.begin() as session:
        # the task row's lock first: a decision (which takes it too) is then either seen
        # below or stored after this commits, when it finds the task waiting and wakes it
        await task_rows.touch(session, task.id)
        rows: list[ApprovalRow] = []
        new: list[ApprovalRow] = []
        for request in requests:
            row, created = await store.add_request(session, task.id, request,
                                                   deadline_seconds=timeout_seconds)
            rows.append(row)
            if created:
                new.append(row)
        if any(row.status != "pending" for row in rows):
            ok = await task_rows.wake(session, task.id, running=owner)
            return "queued" if ok else None
        # each request is announced once; one asked again (a sibling still waiting) only when
        # nothing new waits, as the event of this stop
        announced = new or rows[:1]
        if not await task_rows.wait(session, task.id, attempt, owner, [
                ApprovalRequestedData(approval_id=row.id, node_id=row.node_id, kind=row.kind,
                                      proposal=row.proposal) for row in announced]):
            await session.rollback()
            return None
        endpoints = await webhook_store.targets_in(session, task.id, task.tenant)
        added = 0
        for row in announced if endpoints else ():
            added += await webhook_store.record(session, task.id, "approval.requested",
                                                f"approval:{row.id}",
                                                requested_data(task.id, row), endpoints)
    log.info("task %s waits for %d approval(s): %s", task.id, len(rows),
             ", ".join(f"{row.id} (node {row.node_id}, {row.kind})" for row in rows))
    if added and wake is not None:
        wake()
    return "waiting"


def _validated(row: ApprovalRow, proposal: Any) -> dict[str, Any]:
    """An edit's proposal, validated as the original's kind is (``InvalidField`` naming the
    field under ``proposal``); returns it as the run will take it."""
    given = proposal if isinstance(proposal, dict) else {}
    try:
        if row.kind == "action":
            if "arguments" in row.proposal and "arguments" in given:  # a tool call's
                return edited_call(given, row.proposal)
            return {"action": edited_action(given)}
        shown = plan_proposal(edited_plan(given))
    except InvalidProposal as exc:
        field = "proposal" + (f".{exc.field}" if exc.field else "")
        raise InvalidField(field, str(exc)) from None
    return {"steps": shown["steps"], "execution_order": shown["execution_order"]}


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {k: {"before": before.get(k), "after": after.get(k)} for k in sorted(after)
            if before.get(k) != after.get(k)}


async def decide(session: AsyncSession, task: Task, approval_id: str, decision: DecisionKind,
                 *, reason: str | None, proposal: Any, decided_by: str | None,
                 tenant: str) -> tuple[ApprovalRow, bool]:
    """Record a decision on ``task``'s request ``approval_id`` and commit; returns the row and
    whether the task was queued again (the caller dispatches it). ``NotDecidable`` (409) when
    the request was decided already or the task is finished; ``InvalidField`` (422) for an
    edit whose proposal does not validate, or a field that does not go with the decision."""
    row = await store.get(session, task.id, approval_id)
    if row is None:
        raise NotFound("approval", approval_id)
    if row.status != "pending":
        raise NotDecidable(f"approval {approval_id} was decided already ({row.status})")
    if task.finished:
        raise NotDecidable(f"task {task.id} is {task.status}: nothing waits for a decision")
    edited: dict[str, Any] | None = None
    changes: dict[str, Any] | None = None
    if decision == "edit":
        if proposal is None:
            raise InvalidField("proposal", "an edit needs the changed proposal")
        edited = _validated(row, proposal)
        changes = _changes(row.proposal, edited)
    else:
        if proposal is not None:
            raise InvalidField("proposal", f"a proposal goes with an edit, not a {decision}")
        if decision == "reject":
            changes = {"reason": reason}
    # the event first: it takes the task row's lock, so decisions are numbered in the order
    # they commit (the order sibling nodes waiting at the same time go on in)
    await task_rows.append_event(session, task.id, "approval.decided", ApprovalDecidedData(
        approval_id=row.id, node_id=row.node_id, kind=row.kind, decision=decision,
        reason=reason, decided_by=decided_by))
    number = await store.next_decision_number(session, task.id)
    if not await store.decide(session, row.id, decision, reason=reason, edited=edited,
                              changes=changes, decided_by=decided_by, tenant=tenant,
                              number=number):
        await session.rollback()
        raise NotDecidable(f"approval {approval_id} was decided already")
    woken = False
    # one node at a time: once nothing else waits; sibling nodes waiting at the same time:
    # at each decision (its node goes on while the others wait)
    if (ApprovalConfig.model_validate((task.run_config or {}).get("approval") or {})
            .parallel_siblings or await store.pending_count(session, task.id) == 0):
        woken = await task_rows.wake(session, task.id)
    await session.commit()
    log.info("task %s: approval %s %s by %s", task.id, row.id, store.DECIDED[decision],
             decided_by or "(open API)")
    fresh = await store.get(session, task.id, row.id)
    return (fresh if fresh is not None else row), woken


#: the reason a request nobody answered before its deadline is rejected with
DEADLINE_REASON = "nobody decided before the deadline ({seconds:g} s)"
#: who decided it (``decided_by``)
DEADLINE_DECIDER = "deadline"


async def expire_overdue(sessions: async_sessionmaker[AsyncSession]) -> list[str]:
    """Apply ``approval.on_timeout`` to every pending request whose deadline passed: reject
    it (the task is queued again) or fail its task. Returns the ids of the tasks to dispatch."""
    now = utcnow()
    woken: list[str] = []
    for task_id, approval_id in await store.overdue(sessions, now):
        async with sessions() as session:
            task = await session.get(Task, task_id)
            if task is None:
                continue
            if task.finished:  # ended with it pending (e.g. run ended before it was
                # decided, or stored before pending requests were closed at a task's end)
                await store.withdraw(session, task_id, task.status, now)
                await session.commit()
                continue
            config = ApprovalConfig.model_validate(
                (task.run_config or {}).get("approval") or {})
            seconds = config.timeout_seconds or 0.0
            if config.on_timeout == "fail":
                message = (f"approval {approval_id} had no decision before the deadline "
                           f"({seconds:g} s)")
                # the task row's lock first, as a decision takes it (no deadlock between them)
                await task_rows.touch(session, task_id)
                if await store.expire(session, approval_id, now) and await task_rows.fail_waiting(
                        session, task_id, message):
                    await store.withdraw(session, task_id, "failed", now)  # its siblings'
                    await webhook_store.record_end(session, task_id, f"deadline:{approval_id}",
                                                   "failed", message)
                    await session.commit()
                    log.info("task %s failed: %s", task_id, message)
                else:
                    await session.rollback()
                continue
            try:
                _, again = await decide(session, task, approval_id, "reject",
                                        reason=DEADLINE_REASON.format(seconds=seconds),
                                        proposal=None, decided_by=DEADLINE_DECIDER,
                                        tenant=task.tenant)
            except NotDecidable:  # decided meanwhile
                continue
            if again:
                woken.append(task_id)
    return woken
