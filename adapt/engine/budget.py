"""Per-task budgets. Checked before every LLM call and every node creation."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from adapt.engine.tree import UsageTotals
from adapt.errors import BudgetError


class Budget(BaseModel):
    """Limits for one task. ``None`` means unlimited.

    Tokens and cost are checked before each LLM call, so the call that crosses a limit completes
    and the next one is refused. The deadline also bounds a call in flight.

    The one definition of the budget figures: the operator's default and maximum budgets
    (``ADAPT_DEFAULT_BUDGET``, ``ADAPT_MAX_BUDGET``) are ``Budget`` values too, and the API
    maps these fields (``api/schemas/run_config.py``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_llm_calls: int | None = Field(default=None, ge=1, examples=[200])
    max_tokens: int | None = Field(default=None, ge=1, examples=[500_000])
    max_nodes: int | None = Field(default=None, ge=1, examples=[100])
    max_cost_usd: float | None = Field(default=None, gt=0, examples=[1.0])
    deadline_seconds: float | None = Field(default=None, gt=0, examples=[600])
    max_prompt_chars: int | None = Field(
        default=None, ge=1, examples=[200_000],
        description="Longest prompt (characters) one LLM call may send; a longer one ends the "
        "branch as budget_exceeded.")


class BudgetTracker:
    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining_seconds(self) -> float | None:
        if self.budget.deadline_seconds is None:
            return None
        return self.budget.deadline_seconds - self.elapsed()

    def check_call(self, usage: UsageTotals) -> None:
        b = self.budget
        if b.max_llm_calls is not None and usage.llm_calls >= b.max_llm_calls:
            raise BudgetError("llm_calls", b.max_llm_calls, usage.llm_calls)
        if b.max_tokens is not None and usage.total_tokens >= b.max_tokens:
            raise BudgetError("tokens", b.max_tokens, usage.total_tokens)
        if (
            b.max_cost_usd is not None
            and usage.cost_usd is not None
            and usage.cost_usd >= b.max_cost_usd
        ):
            raise BudgetError("cost_usd", b.max_cost_usd, usage.cost_usd)
        self.check_deadline()

    def check_deadline(self) -> None:
        deadline = self.budget.deadline_seconds
        remaining = self.remaining_seconds()
        if deadline is not None and remaining is not None and remaining <= 0:
            raise BudgetError("deadline_seconds", deadline, self.elapsed())

    def check_prompt(self, chars: int) -> None:
        limit = self.budget.max_prompt_chars
        if limit is not None and chars > limit:
            raise BudgetError("prompt_chars", limit, chars)

    def check_nodes(self, nodes: int) -> None:
        """``nodes``: the count the next node would make; the error reports the nodes that
        exist (so it agrees with the task's node count)."""
        if self.budget.max_nodes is not None and nodes > self.budget.max_nodes:
            raise BudgetError("nodes", self.budget.max_nodes, nodes - 1)
