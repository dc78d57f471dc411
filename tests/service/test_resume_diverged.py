"""A resumed attempt whose replay diverges from what was recorded (the environment's
observations or the prompts changed since, e.g. across an upgrade) ends the task ``error``,
saying so, instead of leaving it running for the sweeper to try again and again: the engine's
end then comes before the events stored already, which the database sink does not write
again. Real SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from adapt.engine import RunConfig
from adapt.engine.config import ModelSpecs
from adapt.engine.resolve import resolve_config
from adapt.envs.textcraft import TextCraft
from adapt.service.execute import ServiceContext, execute_task
from adapt.store.event_log import expand, stored_events
from adapt.store.models import EventRow, LLMCallRow, NodeRow, Task, utcnow
from adapt.store.packing import pack, unpack
from tests.service.test_stored_configs import ctx, insert

__all__ = ["ctx"]  # the worker's context, as the stored-config tests make it (a fixture)

SIM = "sim:textcraft?capability=1"


async def interrupted_mid_run(ctx: ServiceContext, task_id: str) -> int:
    """The finished task as a worker that died before its end left it (the lease run out),
    with its first call recorded against another request; the number of calls stored."""
    async with ctx.sessions.begin() as session:
        # the engine's task.finished is the last event, in the row of the task's last write
        last = (await session.execute(select(EventRow).where(EventRow.task_id == task_id)
                                      .order_by(EventRow.seq.desc()).limit(1))).scalar_one()
        assert expand(last.seq, last.type, last.ordinal, last.node_id, last.payload,
                      last.span, last.packed)[-1][1] == "task.finished"
        if last.span > 1:
            assert last.packed is not None
            last.packed, last.span = pack(unpack(last.packed)[:-1]), last.span - 1
        else:
            await session.delete(last)
        await session.execute(update(Task).where(Task.id == task_id).values(
            status="running", finished_at=None, lease_owner=None,
            lease_expires_at=utcnow() - timedelta(seconds=1)))
        first = (await session.execute(select(func.min(LLMCallRow.id)).where(
            LLMCallRow.task_id == task_id))).scalar_one()
        await session.execute(update(LLMCallRow).where(
            LLMCallRow.task_id == task_id, LLMCallRow.id == first).values(
            request_fingerprint="0" * 64))
        return int((await session.execute(select(func.count()).select_from(LLMCallRow).where(
            LLMCallRow.task_id == task_id))).scalar_one())


async def test_a_resume_whose_replay_diverges_ends_the_task_with_an_error(
        ctx: ServiceContext) -> None:
    resolved, _ = resolve_config(RunConfig(d_max=2), TextCraft,
                                 models=ModelSpecs(executor=(SIM,), planner=SIM))
    task_id = await insert(ctx, resolved.model_dump(mode="json"), executor_model=SIM,
                           planner_model=SIM)
    assert await execute_task(ctx, task_id) in ("succeeded", "failed")
    calls = await interrupted_mid_run(ctx, task_id)

    assert await execute_task(ctx, task_id) == "error"
    async with ctx.sessions() as session:
        task = await session.get(Task, task_id)
        assert task is not None and task.status == "error" and task.finished_at is not None
        assert task.error is not None and "replay diverged at call 0" in task.error
        running = (await session.execute(select(func.count()).select_from(NodeRow).where(
            NodeRow.task_id == task_id, NodeRow.status == "running"))).scalar_one()
        assert running == 0
        assert (await session.execute(select(func.count()).select_from(LLMCallRow).where(
            LLMCallRow.task_id == task_id))).scalar_one() == calls  # nothing paid again
        ends = [e for e in await stored_events(session, task_id) if e[1] == "task.finished"]
        assert len(ends) == 1
    assert await execute_task(ctx, task_id) is None  # finished: nobody takes it again
