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

from sqlalchemy.ext.asyncio import AsyncSession

from adapt.engine.tree import FINAL_STATUSES
from adapt.service.errors import NotResumable
from adapt.store import task_rows
from adapt.store.models import Task

log = logging.getLogger(__name__)


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
    error = task.error
    if not await task_rows.requeue(session, task):  # resumed (or changed) concurrently
        return task, False
    log.info("task %s resumed (was: %s)", task.id, error)
    return task, True
