"""Resume a task that an interruption stopped (``POST /tasks/{id}/resume``).

A task the service stopped from outside the engine's event stream (the provider stayed
unreachable past the task's retry budget, or an unexpected failure) ends ``error`` with no
``result``. Resuming puts it back in the queue: the next attempt replays every recorded LLM call
and environment action (nothing already answered is paid again) and goes on live. A task the
engine itself finished (``result`` set: succeeded, failed, budget exceeded, cancelled, or an
error the engine reported) is final and cannot be resumed.
"""

from __future__ import annotations

import logging

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.store.models import FINAL_STATUSES, EventRow, NodeRow, Task, utcnow

log = logging.getLogger(__name__)


class NotResumable(Exception):
    """The task finished for good; the message says why."""


def resumable(task: Task) -> bool:
    return task.status == "error" and task.result is None


async def resume_task(session: AsyncSession, task: Task) -> tuple[Task, bool]:
    """Queue ``task`` again and commit; returns the fresh row and whether it was resumed now
    (False: it is queued or running already). Raises :class:`NotResumable`."""
    if task.status not in FINAL_STATUSES:
        return task, False
    if not resumable(task):
        raise NotResumable(
            f"task {task.id} finished with status {task.status!r}; only a task an interruption "
            "stopped (status 'error' without a result, e.g. the provider stayed unreachable) "
            "can be resumed")
    now = utcnow()
    error = task.error
    seq = (await session.execute(
        update(Task)
        .where(Task.id == task.id, Task.status == "error", Task.result.is_(None))
        .values(status="queued", error=None, finished_at=None, cancel_requested=False,
                lease_owner=None, lease_expires_at=None, updated_at=now,
                last_seq=Task.last_seq + 1)
        .returning(Task.last_seq)
    )).scalar_one_or_none()
    if seq is None:  # resumed (or changed) concurrently
        await session.rollback()
        await session.refresh(task)
        return task, False
    session.add(EventRow(task_id=task.id, seq=int(seq), type="task.resumed", ordinal=None,
                         created_at=now, payload={"status": "queued", "after": error}))
    # nodes the interruption closed run again (the replay's own updates are not re-written)
    await session.execute(
        update(NodeRow)
        .where(NodeRow.task_id == task.id, NodeRow.status == "failed", NodeRow.error == error)
        .values(status="running", error=None, updated_at=now)
    )
    await session.commit()
    await session.refresh(task)
    log.info("task %s resumed (was: %s)", task.id, error)
    return task, True
