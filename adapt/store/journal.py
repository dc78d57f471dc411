"""What a resumed attempt hands an environment that resumes from its recorded steps
(:mod:`adapt.envs.journal`): the task's action steps, in the order they happened.

Steps are ordered by their ``step`` events' sequence numbers (the event log is the order the
engine emitted them in, whichever nodes they belong to). A fork's first attempt gets its
origin's steps up to the fork point (:func:`split_steps`: the steps the replayed calls led to).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from adapt.envs.journal import RecordedStep
from adapt.store.elided import step_text
from adapt.store.event_log import ROW, expand
from adapt.store.models import EventRow, StepRow, Task

#: the longest chain of forks followed back to its start
MAX_FORK_CHAIN = 1000


def _ref(payload: dict[str, Any]) -> tuple[int, int] | None:
    ref = payload.get("step_ref")
    if isinstance(ref, list) and len(ref) == 2:
        return int(ref[0]), int(ref[1])
    step = payload.get("step")  # rows written before the compact event log
    if isinstance(step, dict):
        return int(step["node_id"]), int(step["index"])
    return None


def _call_id(payload: dict[str, Any]) -> int | None:
    call = payload.get("call_id")
    if call is None and isinstance(payload.get("call"), dict):  # before the compact log
        call = payload["call"].get("id")
    return int(call) if isinstance(call, int) else None


async def split_steps(session: AsyncSession, task_id: str, calls: int | None
                      ) -> tuple[list[RecordedStep], list[RecordedStep]]:
    """The task's recorded action steps, in the order they happened, split at its LLM call
    number ``calls + 1``: the steps taken before it (what the first ``calls`` calls led to:
    a fork at that point replays them) and the steps from it on (None: all before)."""
    stored = (await session.execute(
        select(*ROW)
        .where(EventRow.task_id == task_id,
               EventRow.type.in_(("step", "llm_call")) | (EventRow.span > 1))
        .order_by(EventRow.seq))).all()
    events = [(type_, payload) for row in stored for _, type_, _, _, payload in expand(*row)
              if type_ in ("step", "llm_call")]
    rows = (await session.execute(
        select(StepRow.node_id, StepRow.index, StepRow.kind,
               step_text(StepRow.text, StepRow.raw).label("text"), StepRow.observation, StepRow.reward, StepRow.done)
        .where(StepRow.task_id == task_id))).all()
    by_ref: dict[tuple[int, int], Any] = {(int(r[0]), int(r[1])): r for r in rows}
    before: list[RecordedStep] = []
    after: list[RecordedStep] = []
    into = before
    for type_, payload in events:
        data = dict(payload or {})
        if type_ == "llm_call":
            call = _call_id(data)
            if calls is not None and call is not None and call > calls:
                into = after
            continue
        ref = _ref(data)
        row = by_ref.get(ref) if ref is not None else None
        if row is not None and row.kind == "action":
            into.append(RecordedStep(row.text, row.observation, float(row.reward or 0.0),
                                     bool(row.done)))
    return before, after


async def fork_root(session: AsyncSession, task_id: str) -> str:
    """The task a chain of forks ending at ``task_id`` starts from (``task_id`` itself when it
    is no fork): the key an environment with side effects names its folders by, so that a
    fork's replayed calls name the same paths as its origin's did."""
    at = task_id
    for _ in range(MAX_FORK_CHAIN):
        parent = (await session.execute(select(Task.forked_from_task).where(
            Task.id == at))).scalar_one_or_none()
        if parent is None:
            return at
        at = parent
    return at
