"""The worker runs a task's stored config as it is (issue 35, item 3): a resolved config names
its models itself, and a row stored before configs were resolved (its models in the task's
columns, the cascade in ``executor.models``, every executor kind's fields in one object) still
runs. Real SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapt.engine import RunConfig
from adapt.engine.config import ModelSpecs
from adapt.engine.resolve import resolve_config
from adapt.envs.textcraft import TextCraft
from adapt.service.attempt import prepare_attempt, stored_config
from adapt.service.execute import ServiceContext, execute_task
from adapt.settings import Settings
from adapt.store.models import Task
from tests.service.helpers import task_row
from tests.support.stored_configs import OLD_ROW

WEAK = "sim:textcraft?capability=1"
STRONG = "sim:textcraft?capability=3"
CONFIG = {"goal": "activator rail"}


@pytest.fixture
async def ctx(database_url: str) -> AsyncIterator[ServiceContext]:
    settings = Settings.model_validate({"ADAPT_DATABASE_URL": database_url,
                                        "lease_seconds": 30, "heartbeat_seconds": 0.05})
    c = ServiceContext.create(settings)
    c.worker_id = "w1"
    yield c
    await c.aclose()


async def insert(ctx: ServiceContext, run_config: dict[str, Any], *, executor_model: str,
                 planner_model: str) -> str:
    task_id = uuid.uuid4().hex
    async with ctx.sessions.begin() as session:
        session.add(Task(
            id=task_id, tenant="default", status="queued", environment="textcraft",
            environment_config=CONFIG, strategy=run_config["strategy"],
            d_max=run_config["d_max"], run_config=run_config, executor_model=executor_model,
            planner_model=planner_model, executor_simulated=True, planner_simulated=True))
    return task_id


async def attempt_labels(ctx: ServiceContext, task_id: str) -> list[str]:
    from sqlalchemy import select

    from adapt.store.models import NodeRow

    async with ctx.sessions() as session:
        labels = (await session.execute(select(NodeRow.label).where(
            NodeRow.task_id == task_id, NodeRow.parent_id == 1).order_by(NodeRow.id))).scalars()
        return [label for label in labels if label and label.startswith("attempt")]


async def test_the_worker_builds_the_models_its_resolved_config_names(
        ctx: ServiceContext) -> None:
    """The cascade and the planner come from the stored config (the columns only list them)."""
    resolved, _ = resolve_config(RunConfig(d_max=2), TextCraft,
                                 models=ModelSpecs(executor=(WEAK, STRONG), planner=WEAK))
    task_id = await insert(ctx, resolved.model_dump(mode="json"), executor_model="sim:ignored",
                           planner_model="sim:ignored")
    attempt = await prepare_attempt(ctx, task_id, 1)
    try:
        assert attempt.config == resolved
        assert len(attempt.executors) == 2
    finally:
        attempt.close()
    assert await execute_task(ctx, task_id) == "succeeded"
    labels = await attempt_labels(ctx, task_id)
    assert labels[:2] == [f"attempt 1: {WEAK}&error_rate=0&seed=0",
                          f"attempt 2: {STRONG}&error_rate=0&seed=0"]


async def test_a_row_stored_before_configs_were_resolved_still_runs(ctx: ServiceContext) -> None:
    old = {**OLD_ROW, "d_max": 2, "budget": {**OLD_ROW["budget"], "max_llm_calls": None},
           "executor": {**OLD_ROW["executor"], "kind": "react", "max_tokens": 128,
                        "models": [WEAK, STRONG]}}
    task_id = await insert(ctx, old, executor_model=WEAK, planner_model=WEAK)
    config = stored_config(await task_row(ctx.sessions, task_id))
    assert config.models == ModelSpecs(executor=(WEAK, STRONG), planner=WEAK)
    assert await execute_task(ctx, task_id) == "succeeded"
    assert len(await attempt_labels(ctx, task_id)) >= 2


async def task_state(ctx: ServiceContext, task_id: str) -> Task:
    async with ctx.sessions() as session:
        task = await session.get(Task, task_id)
        assert task is not None
        return task


@pytest.mark.parametrize(("newer", "named"), [
    ({"later_section": {"on": True}}, "later_section"),  # a section this release does not know
    ({"executor": {"kind": "a-later-kind"}}, "kind"),  # a value it does not know
], ids=["field", "value"])
async def test_a_config_a_newer_release_stored_is_handed_back_not_failed(
        ctx: ServiceContext, newer: dict[str, Any], named: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """During an upgrade the new API may store what an old worker cannot read; the old worker
    hands the task back (lease released, no error, no node) for a newer worker to run."""
    resolved, _ = resolve_config(RunConfig(d_max=2), TextCraft,
                                 models=ModelSpecs(executor=(WEAK,), planner=WEAK))
    stored = resolved.model_dump(mode="json")
    task_id = await insert(ctx, {**stored, **{k: {**stored.get(k, {}), **v}
                                             for k, v in newer.items()}},
                           executor_model=WEAK, planner_model=WEAK)
    assert await execute_task(ctx, task_id) is None
    task = await task_state(ctx, task_id)
    assert task.status == "running" and task.lease_owner is None and task.error is None
    assert task.lease_expires_at is not None and task.lease_expires_at <= task.updated_at
    assert await attempt_labels(ctx, task_id) == []
    assert "a newer release stored it" in caplog.text and named in caplog.text
    # a worker of the newer release (here: the config it can read) runs it at once
    async with ctx.sessions.begin() as session:
        row = await session.get(Task, task_id)
        assert row is not None
        row.run_config = stored
    assert await execute_task(ctx, task_id) in ("succeeded", "failed")  # ran, to its end
    assert await attempt_labels(ctx, task_id) != [] or (await task_state(ctx, task_id)).finished_at


async def test_a_config_that_is_wrong_still_fails_the_task(ctx: ServiceContext) -> None:
    resolved, _ = resolve_config(RunConfig(d_max=2), TextCraft,
                                 models=ModelSpecs(executor=(WEAK,), planner=WEAK))
    task_id = await insert(ctx, {**resolved.model_dump(mode="json"), "seed": "seven"},
                           executor_model=WEAK, planner_model=WEAK)
    assert await execute_task(ctx, task_id) == "error"
    assert (await task_state(ctx, task_id)).status == "error"


async def test_a_first_attempt_reads_no_replay_material(ctx: ServiceContext) -> None:
    """An attempt's start reads the stored calls and events only when something is stored
    (``last_seq``): a first attempt has none to read; a later one replays them."""
    from sqlalchemy import event, update

    resolved, _ = resolve_config(RunConfig(d_max=2), TextCraft, models=ModelSpecs(
        executor=(WEAK,), planner=WEAK))
    task_id = await insert(ctx, resolved.model_dump(mode="json"), executor_model=WEAK,
                           planner_model=WEAK)
    sent: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    engine = ctx.sessions.kw["bind"].sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        first_attempt = await prepare_attempt(ctx, task_id, 1)
        first_attempt.close()
        first = [s for s in sent if "FROM llm_calls" in s or "FROM events" in s]
        assert first == []
        assert await execute_task(ctx, task_id) in {"succeeded", "failed"}
        async with ctx.sessions.begin() as session:  # as if it stopped after its calls
            await session.execute(update(Task).where(Task.id == task_id).values(
                status="running"))
        sent.clear()
        later = await prepare_attempt(ctx, task_id, 2)
        later.close()
        assert later.store.skip > 0  # the stored events, counted (their calls replayed)
        assert [s for s in sent if "FROM llm_calls" in s]
        assert [s for s in sent if "FROM events" in s]
    finally:
        event.remove(engine, "before_cursor_execute", seen)
