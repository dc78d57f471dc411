"""Task archives: a task exported from one deployment and imported into another (PostgreSQL to
SQLite and back) has the same tree, steps, events, prompts and row, under the importer's
tenant, and a run replaying its calls pays for none; archives that do not check out are
refused, naming the field."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.llm.base import ChatResponse
from adapt.llm.recording import RecordedCall, Recording, ReplayModel
from adapt.service.archive import SCHEMA_VERSION, check, export_task, import_task
from adapt.service.errors import InvalidField
from adapt.service.execute import execute_task
from adapt.store import approvals as approval_store
from adapt.store import task_rows
from adapt.store.db import create_engine, session_factory
from adapt.store.models import Task
from adapt.store.prompts import call_prompts
from tests.service.helpers import events, insert_task, persisted_tree
from tests.service.test_execute import as_persisted, make_ctx
from tests.support.databases import postgres_database, sqlite_database


@pytest.fixture
def other_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """A second deployment's database, of the other kind."""
    if database_url.startswith("sqlite"):
        with postgres_database() as url:
            yield url
    else:
        with sqlite_database(tmp_path / "other") as url:
            yield url


async def exported(database_url: str, seed: int = 11) -> tuple[str, dict[str, Any], Any]:
    """Run a task in the first deployment; its id, its archive (through JSON) and what it
    stored (tree, events, prompts, row)."""
    ctx = make_ctx(database_url, "w1")
    try:
        task_id = await insert_task(ctx.sessions, config={"seed": seed}, tenant="exporter")
        assert await execute_task(ctx, task_id) == "succeeded"
        async with ctx.sessions() as session:
            task = await session.get(Task, task_id)
            assert task is not None
            document = await export_task(session, task)
        stored = await what_is_stored(ctx.sessions, task_id)
    finally:
        await ctx.aclose()
    return task_id, orjson.loads(orjson.dumps(document)), stored


async def what_is_stored(sessions: async_sessionmaker[AsyncSession], task_id: str) -> Any:
    async with sessions() as session:
        task = await session.get(Task, task_id)
        prompts = await call_prompts(session, task_id)
    assert task is not None
    row = {k: getattr(task, k) for k in ("status", "success", "reward", "result", "error",
                                         "llm_calls", "prompt_tokens", "completion_tokens",
                                         "nodes_count", "max_depth", "last_seq", "run_config",
                                         "environment_config", "resolved_goal", "created_at",
                                         "finished_at")}
    return (await persisted_tree(sessions, task_id),
            [(e.seq, e.type, e.data) for e in await events(sessions, task_id)], prompts, row)


async def test_an_archive_loads_into_another_deployment_and_replays_for_free(
        database_url: str, other_url: str) -> None:
    task_id, document, stored = await exported(database_url)
    assert document["schema_version"] == SCHEMA_VERSION and document["task"]["id"] == task_id
    assert "tenant" not in document["task"] and document["calls"] and document["prompt_blocks"]
    engine = create_engine(other_url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session:
            task = await import_task(session, document, "importer")
        assert task.id != task_id and task.tenant == "importer" and task.lease_owner is None
        assert await what_is_stored(sessions, task.id) == stored
        tree = stored[0]

        # the calls replay: the same run, answered from the imported calls only
        calls, _ = await task_rows.replay_material(sessions, task.id)
        recording = Recording(calls=[
            RecordedCall(index=i, fingerprint=f, response=ChatResponse.model_validate(r))
            for i, (f, r) in enumerate(calls)])
        model = ReplayModel(recording)  # no live model: a call not recorded raises
        sink = MemorySink()
        result = await run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4), model, sink=sink)
        assert result.status == "succeeded"
        assert as_persisted(sink) == tree
        assert model.replayed == len(document["calls"]) and model.live_calls == 0

        async with sessions() as session:  # a second import is a second task
            again = await import_task(session, document, "importer")
            count = await session.scalar(select(func.count()).select_from(Task))
        assert again.id != task.id and count == 2
    finally:
        await engine.dispose()


def refused(document: dict[str, Any]) -> InvalidField:
    with pytest.raises(InvalidField) as caught:
        check(document)
    return caught.value


async def test_archives_that_do_not_check_out_are_refused_naming_the_field(
        sqlite_url: str) -> None:
    _, good, _ = await exported(sqlite_url, seed=3)
    check(copy.deepcopy(good))

    def changed(edit: Any) -> dict[str, Any]:
        doc = copy.deepcopy(good)
        edit(doc)
        return doc

    cases = {
        "schema_version": lambda d: d.update(schema_version=SCHEMA_VERSION + 1),
        "format": lambda d: d.update(format="something else"),
        "task.status": lambda d: d["task"].update(status="running"),
        "prompt_blocks[0].hash": lambda d: d["prompt_blocks"][0].update(
            text=d["prompt_blocks"][0]["text"] + "!"),
        "nodes[0].goal": lambda d: d["nodes"][0].update(goal=None),
        "steps[0].node_id": lambda d: d["steps"][0].update(node_id=999),
        "calls[0].prompt_ref": lambda d: d["calls"][0].update(prompt_ref="0" * 32),
        "calls[1].id": lambda d: d["calls"][1].update(id=d["calls"][0]["id"]),
        "events": lambda d: d["events"].pop(),
        "task.surprise": lambda d: d["task"].update(surprise=1),
        "nodes[0].goal ": lambda d: d["nodes"][0].update(goal="a\x00b"),
    }
    for field, edit in cases.items():
        error = refused(changed(edit))
        assert error.field == field.strip(), (field, error)
        assert error.status == 422
    assert "schema version" in refused(changed(cases["schema_version"])).message


async def test_values_a_column_cannot_hold_are_refused_not_sent_to_the_database(
        sqlite_url: str) -> None:
    _, good, _ = await exported(sqlite_url, seed=3)
    for edit, field in (
        (lambda d: d["task"].update(d_max=2**40), "task.d_max"),
        (lambda d: d["nodes"][0].update(kind="k" * 17), "nodes[0].kind"),
        (lambda d: d["calls"][0].update(prompt_tokens="many"), "calls[0].prompt_tokens"),
    ):
        doc = copy.deepcopy(good)
        edit(doc)
        assert refused(doc).field == field


async def decided_task(database_url: str) -> tuple[str, dict[str, Any]]:
    """A task whose plans waited for decisions (one rejected with a reason, the rest approved),
    finished, and its archive (through JSON)."""
    from tests.service.test_approvals import decide, pending

    ctx = make_ctx(database_url, "w1")
    await ctx.aclose()
    task_id = await insert_task(ctx.sessions, config={"seed": 11}, tenant="exporter",
                                run_config=RunConfig(d_max=4, approval={"plans": True}))
    decisions = 0
    while True:
        ctx = make_ctx(database_url, f"w{decisions}")
        try:
            status = await execute_task(ctx, task_id)
            if status != "waiting":
                break
            (row,) = await pending(ctx, task_id)
            if decisions == 0:
                await decide(ctx, task_id, row, "reject", reason="plan it again")
            else:
                await decide(ctx, task_id, row, "approve")
            decisions += 1
        finally:
            await ctx.aclose()
    assert status in ("succeeded", "failed") and decisions >= 2
    async with ctx.sessions() as session:
        task = await session.get(Task, task_id)
        assert task is not None
        document = await export_task(session, task)
    return task_id, orjson.loads(orjson.dumps(document))


AUDIT = ("node_id", "kind", "number", "proposal", "status", "reason", "edited", "changes",
         "decided_by", "decided_tenant", "requested_at", "decided_at")


async def test_an_archive_carries_the_approvals_and_their_audit(
        database_url: str, other_url: str) -> None:
    task_id, document = await decided_task(database_url)
    approvals = document["approvals"]
    assert [a["status"] for a in approvals][:2] == ["rejected", "approved"]
    assert approvals[0]["reason"] == "plan it again" and approvals[0]["decided_by"] == "key-1"
    assert approvals[0]["changes"] == {"reason": "plan it again"}
    assert all(a["decided_at"] and a["decided_tenant"] == "default" for a in approvals)
    engine = create_engine(other_url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session:
            task = await import_task(session, document, "importer")
        assert task.id != task_id
        async with sessions() as session:
            rows_in = list(await approval_store.for_task(session, task.id))
        assert [{k: getattr(r, k) for k in AUDIT} for r in rows_in] == [
            {k: v for k, v in checked(a).items() if k in AUDIT} for a in approvals]
        old_ids = {a["id"] for a in approvals}
        new_ids = [r.id for r in rows_in]
        assert not old_ids & set(new_ids), "an imported approval has an id of its own"
        # the events name the imported approvals
        named = [ev.data["approval_id"] for ev in await events(sessions, task.id)
                 if ev.type in ("approval.requested", "approval.decided")]
        assert named and set(named) == set(new_ids)
        # a second import into the same deployment is a second task with its own approvals
        async with sessions() as session:
            again = await import_task(session, document, "importer")
            assert len(await approval_store.for_task(session, again.id)) == len(approvals)
        # an archive of version 1 (no approvals) still loads
        old = {k: v for k, v in copy.deepcopy(document).items() if k != "approvals"}
        old["schema_version"] = 1
        async with sessions() as session:
            v1 = await import_task(session, old, "importer")
            assert list(await approval_store.for_task(session, v1.id)) == []
    finally:
        await engine.dispose()
    for edit, field in ((lambda d: d["approvals"][0].update(node_id=999),
                         "approvals[0].node_id"),
                        (lambda d: d["approvals"][1].update(id=d["approvals"][0]["id"]),
                         "approvals[1].id"),
                        (lambda d: d["approvals"][0].update(status=None),
                         "approvals[0].status"),
                        (lambda d: d["approvals"][0].update(colour="red"),
                         "approvals[0].colour")):
        doc = copy.deepcopy(document)
        edit(doc)
        assert refused(doc).field == field, field


def checked(row: dict[str, Any]) -> dict[str, Any]:
    """An archive's approval row with Python values (times parsed)."""
    from datetime import datetime

    return {k: datetime.fromisoformat(v) if k.endswith("_at") and isinstance(v, str) else v
            for k, v in row.items()}
