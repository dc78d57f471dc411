"""The live gate of a worker's models (``ServiceContext.live_model``): while the process drains
no new live call starts, and the calls in flight are counted, for scoring calls (PASS's
``logprob`` rule) as for completions. The retry and gate wrappers keep the model's scoring
capability visible. Real SQLite; the LLM is a scripted fake."""

from __future__ import annotations

import asyncio

import pytest

from adapt.errors import Draining
from adapt.llm.base import ChatRequest, can_score
from adapt.llm.retry import RetryBudget
from adapt.llm.testing import ScriptedModel
from tests.service.test_execute import make_ctx


class SlowScorer(ScriptedModel):
    """Scores after ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(["ok"], name="scorer-fake")
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def score(self, prompt: str, continuation: str) -> list[float] | None:
        self.started.set()
        await self.release.wait()
        return [-0.5]


async def test_a_scoring_call_goes_through_the_live_gate(sqlite_url: str) -> None:
    scorer = SlowScorer()
    ctx = make_ctx(sqlite_url, "w1", model=scorer)
    try:
        model = ctx.live_model("sim:any", RetryBudget(3))
        assert can_score(model)
        scoring = asyncio.ensure_future(model.score("2 + 2 =", " 4"))  # type: ignore[attr-defined]
        await scorer.started.wait()
        assert ctx.live_calls == 1  # counted while in flight
        scorer.release.set()
        assert await scoring == [-0.5]
        assert ctx.live_calls == 0

        ctx.draining = True
        with pytest.raises(Draining):
            await model.score("2 + 2 =", " 4")  # type: ignore[attr-defined]
        with pytest.raises(Draining):
            await model.complete(ChatRequest(prompt="x"))
        assert ctx.live_calls == 0
    finally:
        await ctx.aclose()


async def test_a_model_that_does_not_score_is_not_offered_score(sqlite_url: str) -> None:
    ctx = make_ctx(sqlite_url, "w1", model=ScriptedModel(["ok"]))
    try:
        model = ctx.live_model("sim:any", RetryBudget(3))
        assert not can_score(model)
        assert (await model.complete(ChatRequest(prompt="x"))).text == "ok"
    finally:
        await ctx.aclose()
