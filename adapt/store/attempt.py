"""``AttemptControl``: one attempt's hold on its task, kept apart from the sinks.

An attempt claims the task's lease (``adapt.store.task_rows.claim``), and every write it makes is
fenced by that lease: the task id, the attempt number and the owner. What the database tells
the attempt while it runs lands here, not in a sink: the user's cancel request (read at the
claim, and returned by every batch the database sink writes) and the loss of the lease (a write
refused). The service creates the handle, gives it to the ``DbSink`` that writes under it, and
gives the engine its cancel check (``run_task(cancel=control.cancel_check(...))``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapt.service.errors import LeaseLost


@dataclass
class AttemptControl:
    task_id: str
    attempt: int
    #: the worker holding the lease
    owner: str
    #: the task's cancel flag as the database last said it
    cancel_requested: bool = False
    #: a write of this attempt was refused: another attempt holds the lease now
    lease_lost: bool = False

    def heard(self, *, cancel: bool) -> None:
        """A write landed, and the task row said whether a cancel is requested."""
        self.cancel_requested = self.cancel_requested or cancel

    def refused(self) -> LeaseLost:
        """A write was refused (the lease is another attempt's): the error to raise."""
        self.lease_lost = True
        return LeaseLost(f"task {self.task_id}: attempt {self.attempt} lost its lease")

    def cancel_check(self, ready: Callable[[], bool] | None = None) -> Callable[[], bool]:
        """The engine's cancel check: a requested cancel stops the task before its next LLM
        call, once ``ready`` says so (a resumed attempt: after its replay, whose events must
        equal the recorded ones)."""

        def cancelled() -> bool:
            return self.cancel_requested and (ready is None or ready())

        return cancelled
