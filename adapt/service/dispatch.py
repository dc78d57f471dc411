"""How a created task reaches a worker.

The database is the source of truth; a dispatcher only tells some worker "look at task X".
Dispatching twice is harmless: a worker runs a task only after claiming its lease.
"""

from __future__ import annotations

from typing import Protocol


class Dispatcher(Protocol):
    async def dispatch(self, task_id: str) -> None:
        """Ask a worker to run (or resume) ``task_id``. Must not wait for the task."""
        ...

    async def ready(self) -> bool:
        """Whether the broker (or in-process runner) can accept work (for ``/readyz``)."""
        ...

    async def aclose(self) -> None: ...
