"""PASS's logprob rule through the real service path: the models wrapped for recording and
replay as the service wraps them, the tree persisted by the DB sink, a crash resumed by replay
that covers the scoring calls too. Real SQLite and PostgreSQL; the LLM is a scripted fake."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from adapt.engine import RunConfig
from adapt.engine.executors.spec_agent.pass_output import normalized_score
from adapt.llm.base import ChatRequest, ChatResponse, scoring_request
from adapt.llm.recording import request_fingerprint
from adapt.llm.testing import ScriptedModel
from adapt.service.execute import execute_task
from adapt.store.models import LLMCallRow, Task, utcnow
from adapt.store.prompts import call_prompts
from tests.service.helpers import insert_task, persisted_tree, task_row
from tests.service.test_execute import make_ctx

BATCH = ("[Thought] I need the apples in the bags and the eaten apples.\n"
         "[Action] calculator\n[Action Input] 3 * 12\n"
         "[Action] calculator\n[Action Input] 5 * 1\n")
SUMMARY = "36 apples in the bags, 5 eaten."
RAW = "1. 36\n2. 5"
FINAL = "[Final Thought] 36 - 5 = 31.\n[Answer] 31"
LOGPROBS = {SUMMARY: [-5.0] * 8, RAW: [-0.1, -0.1, -0.1]}  # the raw results are likelier


class Scorer(ScriptedModel):
    """Scripted replies and log-probabilities; can hang before its ``hang_at``-th reply."""

    def __init__(self, replies: tuple[str, ...] = (BATCH, SUMMARY, FINAL),
                 hang_at: int | None = None) -> None:
        super().__init__(list(replies), name="scorer-fake")
        self.hang_at = hang_at
        self.hung = asyncio.Event()
        self.scored: list[str] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self.hang_at is not None and len(self.requests) + 1 >= self.hang_at:
            self.hung.set()
            await asyncio.Event().wait()
        return await super().complete(request)

    async def score(self, prompt: str, continuation: str) -> list[float] | None:
        self.scored.append(continuation)
        return LOGPROBS[continuation]


def pass_task() -> RunConfig:
    return RunConfig(strategy="react", d_max=1,
                     executor={"kind": "spec", "spec": "pass", "pass_output": "auto"})


async def sum_step(sessions, task_id: str) -> dict:  # type: ignore[no-untyped-def]
    tree = await persisted_tree(sessions, task_id)
    return next(s for s in tree["steps"][1]
                if s["kind"] == "thought" and (s["extra"] or {}).get("state") == "Sum")


async def test_pass_scores_with_logprobs_in_the_service(database_url: str) -> None:
    model = Scorer()
    ctx = make_ctx(database_url, "w1", model)  # type: ignore[arg-type]
    task_id = await insert_task(ctx.sessions, environment="calculator", config={"index": 0},
                                model="scorer-fake", run_config=pass_task())
    assert await execute_task(ctx, task_id) == "succeeded"

    step = await sum_step(ctx.sessions, task_id)
    assert step["extra"]["rule"] == "logprob" and step["extra"]["pass_output"] == "raw"
    assert step["extra"]["scores"] == {"summary": normalized_score(LOGPROBS[SUMMARY]),
                                       "raw": normalized_score(LOGPROBS[RAW])}
    assert sorted(model.scored) == sorted([SUMMARY, RAW])
    async with ctx.sessions() as session:
        rows = (await session.execute(select(LLMCallRow).where(
            LLMCallRow.task_id == task_id).order_by(LLMCallRow.id))).scalars().all()
        prompts = await call_prompts(session, task_id)
    assert [r.role for r in rows] == ["executor", "summarizer", "scorer", "scorer", "executor"]
    context = model.prompts[0] + BATCH + "[Summary] "
    for row in rows[2:4]:  # each scoring call stores what replay checks and answers with
        continuation = (prompts[row.id].prompt or "")[len(context):]
        assert row.request_fingerprint == request_fingerprint(
            scoring_request(context, continuation))
        assert row.response["logprobs"] == LOGPROBS[continuation]
    for row, request in zip([rows[0], rows[1], rows[4]], model.requests, strict=True):
        assert row.request_fingerprint == request_fingerprint(request)
    await ctx.aclose()


async def test_a_resumed_task_replays_its_scoring_calls(database_url: str) -> None:
    first = Scorer(hang_at=3)  # dies before the final answer, after both scoring calls
    ctx1 = make_ctx(database_url, "w1", first)  # type: ignore[arg-type]
    task_id = await insert_task(ctx1.sessions, environment="calculator", config={"index": 0},
                                model="scorer-fake", run_config=pass_task())
    run1 = asyncio.create_task(execute_task(ctx1, task_id))
    await asyncio.wait_for(first.hung.wait(), 20)
    run1.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run1
    assert sorted(first.scored) == sorted([SUMMARY, RAW])

    second = Scorer(replies=(FINAL,))  # what the first worker did not get to
    ctx2 = make_ctx(database_url, "w2", second)  # type: ignore[arg-type]
    async with ctx2.sessions.begin() as s:  # the first worker's lease expires
        await s.execute(update(Task).where(Task.id == task_id)
                        .values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    assert await execute_task(ctx2, task_id) == "succeeded"
    assert second.scored == [], "the scoring calls were made again instead of replayed"
    assert len(second.requests) == 1  # only the final answer ran live
    task = await task_row(ctx2.sessions, task_id)
    assert task.attempt == 2 and task.llm_calls == 5
    step = await sum_step(ctx2.sessions, task_id)
    assert step["extra"]["rule"] == "logprob" and step["extra"]["pass_output"] == "raw"
    await ctx1.aclose()
    await ctx2.aclose()
