"""What a resumed attempt hands an environment that resumes from its recorded steps
(:mod:`adapt.envs.journal`): the task's action steps, in the order they happened.

Steps are ordered by their ``step`` events' sequence numbers (the event log is the order the
engine emitted them in, whichever nodes they belong to).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.envs.journal import RecordedStep
from adapt.store.event_log import ROW, expand
from adapt.store.models import EventRow, StepRow


def _ref(payload: dict[str, Any]) -> tuple[int, int] | None:
    ref = payload.get("step_ref")
    if isinstance(ref, list) and len(ref) == 2:
        return int(ref[0]), int(ref[1])
    step = payload.get("step")  # rows written before the compact event log
    if isinstance(step, dict):
        return int(step["node_id"]), int(step["index"])
    return None


async def recorded_steps(sessions: async_sessionmaker[AsyncSession],
                         task_id: str) -> list[RecordedStep]:
    """The task's recorded action steps (not thoughts), in the order they happened."""
    async with sessions() as session:
        stored = (await session.execute(
            select(*ROW)
            .where(EventRow.task_id == task_id, (EventRow.type == "step") | (EventRow.span > 1))
            .order_by(EventRow.seq))).all()
        events = [payload for row in stored for _, type_, _, _, payload in expand(*row)
                  if type_ == "step"]
        rows = (await session.execute(
            select(StepRow.node_id, StepRow.index, StepRow.kind, StepRow.text,
                   StepRow.observation, StepRow.reward, StepRow.done)
            .where(StepRow.task_id == task_id))).all()
    by_ref: dict[tuple[int, int], Any] = {(int(r[0]), int(r[1])): r for r in rows}
    out: list[RecordedStep] = []
    for payload in events:
        ref = _ref(dict(payload or {}))
        row = by_ref.get(ref) if ref is not None else None
        if row is not None and row.kind == "action":
            out.append(RecordedStep(row.text, row.observation, float(row.reward or 0.0),
                                    bool(row.done)))
    return out
