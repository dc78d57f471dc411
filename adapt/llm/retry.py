"""Retrying transient provider errors, within a per-task budget, and counting the retries.

``RetryingModel`` wraps a model whose own client does not retry (``max_retries=0``). A
:class:`~adapt.errors.ProviderError` marked ``retryable`` (429, 408/409, 5xx, timeouts,
connection errors) is retried after the delay the provider asked for (``Retry-After``), or else
after an exponential backoff with full jitter. Every retry of every call of one task draws on
one :class:`RetryBudget`; the number of retries a call needed is returned on its response
(``ChatResponse.retries``), so it is recorded with the call.

When a call still fails (the budget is spent, a call used up its ``max_retries``, or the
provider asks for a longer pause than ``max_wait``), :class:`~adapt.errors.ProviderUnavailable`
is raised. It interrupts the task instead of failing it: the service ends the attempt in a state
``POST /tasks/{id}/resume`` resumes by replay, so the calls already answered are not paid
again.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from adapt.errors import ProviderError, ProviderUnavailable
from adapt.llm.base import ChatModel, ChatRequest, ChatResponse, WrapperModel

log = logging.getLogger(__name__)

#: first backoff step and the longest backoff pause (seconds), without a Retry-After
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0


@dataclass
class RetryBudget:
    """Retries one task may spend across all its calls."""

    limit: int
    used: int = 0

    def take(self) -> bool:
        if self.used >= self.limit:
            return False
        self.used += 1
        return True


def backoff(retry: int, retry_after: float | None, *, rng: random.Random | None = None,
            base: float = BACKOFF_BASE, cap: float = BACKOFF_MAX) -> float:
    """Seconds to wait before retry number ``retry`` (1-based): what the provider asked for
    (plus a little jitter so that many tasks do not come back at the same instant), else full
    jitter over an exponential step."""
    r = rng or random
    if retry_after is not None:
        return retry_after + r.uniform(0, min(1.0, 0.1 * retry_after + 0.05))
    return r.uniform(0, min(cap, base * 2 ** (retry - 1)))


class RetryingModel(WrapperModel):
    """Retries ``wrapped``'s transient errors (see the module docs). Its other capabilities
    (``score``) are forwarded unchanged, by :class:`~adapt.llm.base.WrapperModel`."""

    def __init__(self, inner: ChatModel, budget: RetryBudget, *, max_retries: int = 3,
                 max_wait: float = 60.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        super().__init__(inner)
        self.budget = budget
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._sleep = sleep

    async def complete(self, request: ChatRequest) -> ChatResponse:
        retries = 0
        while True:
            try:
                response = await self.wrapped.complete(request)
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                why = self._give_up(exc, retries)
                if why is not None:
                    raise ProviderUnavailable(
                        f"{exc} ({why}); the task can be resumed with POST /tasks/{{id}}/resume",
                        retries=retries) from exc
                retries += 1
                delay = backoff(retries, exc.retry_after)
                log.info("provider error (%s); retry %d in %.2fs", exc.status or "no status",
                         retries, delay)
                await self._sleep(delay)
                continue
            if retries:
                response = response.model_copy(update={"retries": retries})
            return response

    def _give_up(self, exc: ProviderError, retries: int) -> str | None:
        if retries >= self.max_retries:
            return f"{retries} retries of this call"
        if exc.retry_after is not None and exc.retry_after > self.max_wait:
            return f"the provider asked to wait {exc.retry_after:g}s, more than {self.max_wait:g}s"
        if not self.budget.take():
            return f"the task's retry budget of {self.budget.limit} is spent"
        return None
