"""Sibling nodes that wait for decisions at the same time (``approval.parallel_siblings``).

Without the option the engine runs one node at a time, and the first approval request with no
decision stops the run. With it, while a node waits for a decision the later children of its
AND group start too, so a task can wait on several requests at once. The schedule stays
deterministic, so a later attempt of the task replays exactly what an earlier one stored:

- Cooperative, one coroutine at a time. An AND group starts its children as asyncio tasks, one
  after the other: it starts child 1 and waits until that child ends or *parks* (its
  ``Run.ask``, at any depth below it, registers the request here and awaits a future); then it
  starts child 2, and so on. A parked grandchild parks its ancestors' child task: the group
  below it starts its own later children first, then waits for them, which is idle too.
- ``Run.ask`` always parks in this mode, even when the decision exists, so that the first pass
  (everything that can start before any decision is applied) is the same in every attempt.
- When everything is parked or waits for its children (nothing left to start), the driver
  (:meth:`Siblings.drive`) takes, among the parked requests that have a decision, the one
  *decided first* (``Decision.order``: the service numbers decisions per task as they are
  stored; no order: the order the requests were made) and lets its coroutine go on until all is
  quiet again. The decisions a later attempt knows are those of the earlier one followed by
  newer ones, so it makes the same choices up to where the earlier one stopped.
- When no parked request has a decision, the run stops with ``AwaitingApproval`` carrying every
  pending request (the parked coroutines unwind with it, as a sequential run's would).

Which coroutine may run is tracked with a count of the runnable ones (``active``, 0 or 1) and a
stack of groups waiting for the child they started to settle; the innermost waits on top.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from adapt.engine.approvals import ApprovalRequest, Decision
from adapt.errors import AwaitingApproval

T = TypeVar("T")


@dataclass(eq=False)
class Parked:
    """One request waiting in a parked coroutine."""

    request: ApprovalRequest
    #: the decision the gate had for it (None: none yet)
    decision: Decision | None
    future: asyncio.Future[Decision]
    #: the how-manieth request parked in this run
    index: int

    def rank(self) -> tuple[bool, int, int]:
        order = self.decision.order if self.decision is not None else None
        return (order is None, order or 0, self.index)


@dataclass(eq=False)
class Group:
    """The children an AND group started, as tasks."""

    tasks: list[asyncio.Task[bool]] = field(default_factory=list)
    #: children not ended yet
    remaining: int = 0
    #: the first exception a child raised
    error: BaseException | None = None
    #: set while the group waits for all its children (``join``)
    waiting: asyncio.Future[None] | None = None


class Siblings:
    """The scheduler of one run (``Run.siblings`` when ``approval.parallel_siblings`` is on)."""

    def __init__(self) -> None:
        self.active = 0
        self._settling: list[asyncio.Future[None]] = []
        self.parked: list[Parked] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._idle: asyncio.Future[None] | None = None
        self._stopping = False

    # -- who runs next -----------------------------------------------------------------------
    def _wake(self, future: asyncio.Future[Any], result: Any = None) -> None:
        self.active += 1
        future.set_result(result)

    def _block(self) -> None:
        """The running coroutine is about to wait: hand over to whoever is next."""
        self.active -= 1
        if self.active > 0 or self._stopping:
            return
        if self._settling:
            self._wake(self._settling.pop())
        elif self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    # -- the engine's side -------------------------------------------------------------------
    async def park(self, request: ApprovalRequest, decision: Decision | None) -> Decision:
        """Wait here for the driver to hand ``decision`` back (``Run.ask``)."""
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.parked.append(Parked(request, decision, future, len(self.parked)))
        self._block()
        return await future

    def start(self, group: Group, child: Awaitable[bool]) -> asyncio.Task[bool]:
        """Start ``child`` as a task of ``group``; the caller then awaits :meth:`settle`."""
        self.active += 1
        group.remaining += 1
        task = asyncio.create_task(self._child(group, child))
        group.tasks.append(task)
        self._tasks.append(task)
        return task

    async def _child(self, group: Group, child: Awaitable[bool]) -> bool:
        try:
            return await child
        except BaseException as exc:
            if group.error is None and not isinstance(exc, asyncio.CancelledError):
                group.error = exc
            raise
        finally:
            group.remaining -= 1
            if group.waiting is not None and (group.remaining == 0 or group.error):
                waiting, group.waiting = group.waiting, None
                if self._stopping:  # unwinding: the group ends too
                    waiting.set_result(None)
                else:
                    self._wake(waiting)
            if not self._stopping:
                self._block()

    async def settle(self) -> None:
        """Wait until the child just started ends or parks (with all it started)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._settling.append(future)
        self._block()
        await future

    async def join(self, group: Group) -> None:
        """Wait until every child of ``group`` ended; re-raises the first child's error."""
        while True:
            if group.error is not None:
                raise group.error
            if group.remaining == 0:
                return
            group.waiting = asyncio.get_running_loop().create_future()
            self._block()
            await group.waiting

    # -- the driver --------------------------------------------------------------------------
    async def drive(self, main: Awaitable[T], flush: Callable[[], Awaitable[None]]) -> T:
        """Run ``main`` (the strategy) to its end, handing decisions to the parked requests in
        the order they were made; ``AwaitingApproval`` with every pending request when none of
        them has a decision (after ``flush``)."""
        loop = asyncio.get_running_loop()
        self.active = 1
        task = asyncio.create_task(_awaited(main))
        try:
            while True:
                self._idle = loop.create_future()
                await asyncio.wait((task, self._idle), return_when=asyncio.FIRST_COMPLETED)
                if task.done():
                    break
                waiting = [p for p in self.parked if not p.future.done()]
                ready = [p for p in waiting if p.decision is not None]
                if not ready:
                    await flush()
                    await self._unwind(task, waiting)
                    raise AwaitingApproval([p.request for p in waiting])
                pick = min(ready, key=Parked.rank)
                self._wake(pick.future, pick.decision)
            waiting = [p for p in self.parked if not p.future.done()]
            if waiting:  # the run ended (an error) while others waited: they end too
                await self._unwind(task, waiting)
            return task.result()
        finally:
            left = [t for t in (task, *self._tasks) if not t.done()]
            if left:  # the caller was cancelled (or the flush failed): nothing stays behind
                self._stopping = True
                for t in left:
                    t.cancel()
                await asyncio.gather(*left, return_exceptions=True)

    async def _unwind(self, task: asyncio.Task[Any], waiting: list[Parked]) -> None:
        """End the parked coroutines the way a sequential run stops: with AwaitingApproval."""
        self._stopping = True
        for p in waiting:
            p.future.set_exception(AwaitingApproval([p.request]))
        await asyncio.gather(task, *self._tasks, return_exceptions=True)


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


__all__ = ["Group", "Parked", "Siblings"]
