"""Alembic owns the schema: migrations apply on SQLite and PostgreSQL, with no drift."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, event, text

from adapt.store.migrate import _sync_url, pending
from adapt.store.models import Base


def test_migrations_match_the_models(database_url: str) -> None:
    assert pending(database_url) == []
    engine = create_engine(_sync_url(database_url))
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diffs = compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()
    assert diffs == [], f"models and migrations drifted: {diffs}"


def test_pending_on_an_empty_database(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert pending(f"sqlite:///{tmp_path / 'empty.db'}") == ["0001", "0002", "0003", "0004", "0005", "0006", "0007",
                                                      "0008", "0009", "0010", "0011",
                                                      "0012", "0013", "0014", "0015", "0016", "0017",
                                                      "0018", "0019", "0020", "0021"]


def test_upgrade_from_0001_keeps_rows_and_adds_the_monitor_column(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database created at 0001 (the first release) upgrades in place to the head."""
    from alembic import command
    from sqlalchemy import inspect

    from adapt.store.migrate import alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    cfg = alembic_config(url)
    command.upgrade(cfg, "0001")
    engine = create_engine(url)
    try:
        assert "monitor" not in {c["name"] for c in inspect(engine).get_columns("llm_calls")}
        command.upgrade(cfg, "head")
        assert "monitor" in {c["name"] for c in inspect(engine).get_columns("llm_calls")}
    finally:
        engine.dispose()
    assert pending(url) == []


def _old_db(backend: str, tmp_path):  # type: ignore[no-untyped-def]
    from tests.support.databases import postgres_database, sqlite_database

    if backend == "sqlite":
        return sqlite_database(tmp_path, migrate=False)
    return postgres_database(migrate=False)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0007_stores_message_lists_and_converts_rows_both_ways(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Rows written at 0006 ({"messages": [...]}, {"stop": [...]}) read as plain lists after
    the upgrade, and as the wrapped dicts again after the downgrade; nulls stay null."""
    from alembic import command

    from adapt.store.migrate import alembic_config

    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0006")
        engine = create_engine(_sync_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(text(
                    "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                    "strategy, profile, d_max, run_config, executor_model, planner_model, "
                    "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                    "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                    "last_seq, created_at, updated_at) VALUES ('t1', 'x', 'queued', "
                    "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', 'sim:a', true, "
                    "true, 0, 0, 0, 0, 0, false, 0, 0, :now, :now)"), {"now": "2026-01-01"})
                rows = [
                    (1, {"messages": messages}, {"stop": ["\n", "END"]}, None),
                    (2, None, {"stop": []}, "a prompt"),
                ]
                for call_id, msgs, stop, prompt in rows:
                    conn.execute(text(
                        "INSERT INTO llm_calls (task_id, id, role, model, simulated, prompt, "
                        "messages, stop, request_fingerprint, response, completion, "
                        "prompt_tokens, completion_tokens, usage_estimated, latency_s, "
                        "attempt, created_at) VALUES ('t1', :id, 'executor', 'sim:a', true, "
                        ":prompt, :messages, :stop, 'f', '{}', 'ok', 0, 0, false, 0, 1, :now)"),
                        {"id": call_id, "prompt": prompt, "now": "2026-01-01",
                         "messages": None if msgs is None else json.dumps(msgs),
                         "stop": json.dumps(stop)})

            def stored() -> list[tuple[object, object]]:
                with engine.connect() as conn:
                    found = conn.execute(text(
                        "SELECT messages, stop FROM llm_calls ORDER BY id")).all()
                return [tuple(v if v is None or not isinstance(v, str) else json.loads(v)
                              for v in row) for row in found]

            command.upgrade(cfg, "0009")  # 0010 moves prompts into blocks
            assert stored() == [(messages, ["\n", "END"]), (None, [])]
            command.downgrade(cfg, "0006")
            assert stored() == [({"messages": messages}, {"stop": ["\n", "END"]}),
                                (None, {"stop": []})]
            command.upgrade(cfg, "0009")  # 0010 moves prompts into blocks
            assert stored() == [(messages, ["\n", "END"]), (None, [])]
        finally:
            engine.dispose()


def test_upgrade_from_0007_adds_the_webhook_tables_and_keeps_tasks(database_url: str) -> None:
    """The webhook migration on a database at 0007 holding a task (SQLite and PostgreSQL)."""
    from alembic import command
    from sqlalchemy import inspect, text

    from adapt.store.migrate import alembic_config

    cfg = alembic_config(database_url)
    command.downgrade(cfg, "0007")
    engine = create_engine(_sync_url(database_url))
    try:
        assert "webhook_deliveries" not in inspect(engine).get_table_names()
        with engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                "strategy, profile, d_max, run_config, executor_model, planner_model, "
                "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                "last_seq, created_at, updated_at) VALUES ('t1', 'default', 'queued', "
                "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:x', 'sim:x', true, "
                "true, 0, 0, 0, 0, 0, false, 0, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
        command.upgrade(cfg, "head")
        tables = inspect(engine).get_table_names()
        assert {"webhook_endpoints", "webhook_deliveries"} <= set(tables)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT id FROM tasks")).scalars().all() == ["t1"]
    finally:
        engine.dispose()
    assert pending(database_url) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0010_moves_stored_prompts_into_shared_blocks_and_back(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Prompts and messages stored inline at 0009 become block chains (the header once) that
    read back exactly through ``call_prompts``; the downgrade writes them inline again."""
    import asyncio

    from alembic import command

    from adapt.store.db import create_engine as create_async_engine
    from adapt.store.db import session_factory
    from adapt.store.migrate import alembic_config
    from adapt.store.prompts import call_prompts

    header = "You craft things.\n\n" + "An example.\n" * 40 + "\n"
    prompts = {1: header + "Goal: a stick.\n> ", 2: header + "Goal: a stick.\n> get 1 plank\n> ",
               3: header + "Goal: a bed.\n> ", 4: None}
    messages = {4: [{"role": "system", "content": header}, {"role": "user", "content": "go"}]}
    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0009")
        engine = create_engine(_sync_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(text(
                    "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                    "strategy, profile, d_max, run_config, executor_model, planner_model, "
                    "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                    "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                    "last_seq, created_at, updated_at) VALUES ('t1', 'x', 'queued', "
                    "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', 'sim:a', true, "
                    "true, 0, 0, 0, 0, 0, false, 0, 0, :now, :now)"), {"now": "2026-01-01"})
                for call_id, prompt in prompts.items():
                    conn.execute(text(
                        "INSERT INTO llm_calls (task_id, id, node_id, role, model, simulated, "
                        "prompt, messages, stop, request_fingerprint, response, completion, "
                        "prompt_tokens, completion_tokens, usage_estimated, latency_s, "
                        "attempt, created_at) VALUES ('t1', :id, :node, 'executor', 'sim:a', "
                        "true, :prompt, :messages, '[]', 'f', '{}', 'ok', 0, 0, false, 0, 1, "
                        ":now)"),
                        {"id": call_id, "node": 1 if call_id < 3 else 2, "prompt": prompt,
                         "now": "2026-01-01",
                         "messages": json.dumps(messages[call_id]) if call_id in messages
                         else None})

            def read() -> dict[int, tuple[object, object]]:
                async def go() -> dict[int, tuple[object, object]]:
                    aengine = create_async_engine(url)
                    try:
                        async with session_factory(aengine)() as session:
                            got = await call_prompts(session, "t1")
                    finally:
                        await aengine.dispose()
                    return {i: (p.prompt, p.messages) for i, p in got.items()}
                return asyncio.run(go())

            expected = {i: (p, messages.get(i)) for i, p in prompts.items()}
            command.upgrade(cfg, "head")
            assert read() == expected
            with engine.connect() as conn:
                inline = conn.execute(text(
                    "SELECT count(*) FROM llm_calls WHERE prompt IS NOT NULL "
                    "OR messages IS NOT NULL OR prompt_ref IS NULL")).scalar_one()
                stored = conn.execute(text("SELECT text FROM prompt_blocks")).scalars().all()
            assert inline == 0
            assert sum(len(t) for t in stored) < len(header) * 2.5  # not once per call
            command.downgrade(cfg, "0009")
            with engine.connect() as conn:
                rows = conn.execute(text(
                    "SELECT id, prompt, messages FROM llm_calls ORDER BY id")).all()
            assert {r[0]: (r[1], r[2] if r[2] is None or not isinstance(r[2], str)
                           else json.loads(r[2])) for r in rows} == expected
            command.upgrade(cfg, "head")
            assert read() == expected
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0011_indexes_node_events_and_the_downgrade_writes_compact_payloads_whole(
        backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Events stored whole before 0011 get their node id and read as they are; compact events
    (a node update, a step and a call named by their rows) are written whole again by the
    downgrade, for the code before 0011."""
    import asyncio

    from alembic import command

    from adapt.store.db import create_engine as create_async_engine
    from adapt.store.db import session_factory
    from adapt.store.event_log import read_events
    from adapt.store.migrate import alembic_config

    node = {"id": 1, "parent_id": None, "goal": "craft a stick", "status": "running",
            "usage": {"llm_calls": 0}}
    done = {**node, "status": "succeeded", "usage": {"llm_calls": 1}}
    step = {"kind": "action", "node_id": 1, "index": 1, "raw": "get 1 log", "text": "get 1 log",
            "observation": "Got 1 log", "reward": 0.0, "done": False, "error": None,
            "extra": None}
    call = {"id": 1, "node_id": 1, "role": "executor", "model": "sim:a", "simulated": True,
            "stop": ["\n"], "completion": "get 1 log", "prompt_tokens": 5,
            "completion_tokens": 3, "usage_estimated": True, "latency_s": 0.5,
            "cost_usd": 0.0, "monitor": None, "retries": 0, "prompt": None, "messages": None}
    insert_task = text(
        "INSERT INTO tasks (id, tenant, status, environment, environment_config, strategy, "
        "profile, d_max, run_config, executor_model, planner_model, executor_simulated, "
        "planner_simulated, llm_calls, prompt_tokens, completion_tokens, nodes_count, "
        "max_depth, cancel_requested, attempt, last_seq, created_at, updated_at) VALUES "
        "(:id, 'x', 'running', 'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', "
        "'sim:a', true, true, 1, 5, 3, 1, 1, false, 1, 0, :now, :now)")
    insert_event = text("INSERT INTO events (task_id, seq, type, payload, ordinal, created_at) "
                        "VALUES (:t, :s, :type, :p, :s, :now)")
    whole = [("node.created", {"node": node}), ("step", {"step": step}),
             ("llm_call", {"call": call}), ("node.updated", {"node": done})]

    def read(url: str, task_id: str) -> list[tuple[str, object]]:
        async def go() -> list[tuple[str, object]]:
            engine = create_async_engine(url)
            try:
                async with session_factory(engine)() as session:
                    events = await read_events(session, task_id, 0, None)
            finally:
                await engine.dispose()
            return [(e.type, e.data) for e in events]
        return asyncio.run(go())

    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0010")
        engine = create_engine(_sync_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(insert_task, {"id": "old", "now": "2026-01-01"})
                for seq, (type_, payload) in enumerate(whole, 1):
                    conn.execute(insert_event, {"t": "old", "s": seq, "type": type_,
                                                "p": json.dumps(payload), "now": "2026-01-01"})
            command.upgrade(cfg, "head")
            with engine.connect() as conn:
                ids = conn.execute(text("SELECT node_id FROM events WHERE task_id = 'old' "
                                        "ORDER BY seq")).scalars().all()
            assert ids == [1, None, None, 1]
            assert read(url, "old") == whole

            with engine.begin() as conn:  # the same task as the sink now stores it
                conn.execute(insert_task, {"id": "new", "now": "2026-01-01"})
                conn.execute(text(
                    "INSERT INTO nodes (task_id, id, position, depth, kind, goal, status, "
                    "steps_count, usage, updated_at) VALUES ('new', 1, 0, 1, 'task', 'g', "
                    "'succeeded', 1, '{}', :now)"), {"now": "2026-01-01"})
                conn.execute(text(
                    'INSERT INTO steps (task_id, node_id, "index", kind, raw, text, observation, '
                    "reward, done) VALUES ('new', 1, 1, 'action', 'get 1 log', 'get 1 log', "
                    "'Got 1 log', 0, false)"))
                conn.execute(text(
                    "INSERT INTO llm_calls (task_id, id, node_id, role, model, simulated, stop, "
                    "request_fingerprint, response, completion, prompt_tokens, "
                    "completion_tokens, usage_estimated, latency_s, cost_usd, retries, "
                    "attempt, created_at) VALUES ('new', 1, 1, 'executor', 'sim:a', true, "
                    "'[\"\\n\"]', 'f', '{}', 'get 1 log', 5, 3, true, 0.5, 0, 0, 1, :now)"),
                    {"now": "2026-01-01"})
                compact = [("node.created", {"node": node}, 1),
                           ("step", {"step_ref": [1, 1]}, None),
                           ("llm_call", {"call_id": 1}, None),
                           ("node.updated", {"node_id": 1, "changed": {
                               "status": "succeeded", "usage": {"llm_calls": 1}}}, 1)]
                for seq, (type_, payload, node_id) in enumerate(compact, 1):
                    conn.execute(text(
                        "INSERT INTO events (task_id, seq, type, payload, ordinal, node_id, "
                        "created_at) VALUES ('new', :s, :type, :p, :s, :n, :now)"),
                        {"s": seq, "type": type_, "p": json.dumps(payload), "n": node_id,
                         "now": "2026-01-01"})
            # (a call row read back carries request_model, a column since 0012: none here;
            # and the tool calls of its response: none)
            assert read(url, "new") == [
                (t, {"call": {**call, "request_model": None, "tools": None, "tool_calls": None}}
                 if t == "llm_call" else p)
                for t, p in whole]
            command.downgrade(cfg, "0010")
            with engine.connect() as conn:
                rows = conn.execute(text("SELECT type, payload FROM events WHERE task_id = "
                                         "'new' ORDER BY seq")).all()
            assert [(t, json.loads(p) if isinstance(p, str) else p) for t, p in rows] == whole
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0013_adds_the_block_keys_after_dropping_what_they_would_refuse(
        backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database at 0012 with whole chains, a chain whose first block was lost and a call
    naming a missing block: after 0013, whole chains read as before, the broken ones are gone,
    and the database refuses a call or a block that names a missing block; the downgrade
    takes the keys away again."""
    from alembic import command
    from sqlalchemy.exc import IntegrityError

    from adapt.store.migrate import alembic_config
    from adapt.store.prompts import block_hash

    a = block_hash(None, "Pheader\n\n")
    b = block_hash(a, "goal: a stick")
    lost = block_hash(None, "lost")
    orphan = block_hash(lost, "orphan")
    blocks = [(b, a, "goal: a stick"), (a, None, "Pheader\n\n"), (orphan, lost, "orphan")]
    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0012")
        engine = create_engine(_sync_url(url))
        if backend == "sqlite":  # as adapt's engines do (adapt.store.db)
            event.listen(engine, "connect",
                         lambda conn, _: conn.execute("PRAGMA foreign_keys=ON"))
        try:
            with engine.begin() as conn:
                conn.execute(text(
                    "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                    "strategy, profile, d_max, run_config, executor_model, planner_model, "
                    "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                    "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                    "last_seq, created_at, updated_at) VALUES ('t1', 'x', 'succeeded', "
                    "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', 'sim:a', true, "
                    "true, 0, 0, 0, 0, 0, false, 0, 0, :now, :now)"), {"now": "2026-01-01"})
                for h, p, t in blocks:
                    conn.execute(text("INSERT INTO prompt_blocks (hash, parent, text) "
                                      "VALUES (:h, :p, :t)"), {"h": h, "p": p, "t": t})
                for call_id, ref in ((1, b), (2, orphan), (3, "f" * 32), (4, None)):
                    conn.execute(text(
                        "INSERT INTO llm_calls (task_id, id, role, model, simulated, stop, "
                        "request_fingerprint, response, completion, prompt_tokens, "
                        "completion_tokens, usage_estimated, latency_s, attempt, created_at, "
                        "prompt_ref) VALUES ('t1', :id, 'executor', 'sim:a', true, '[]', 'f', "
                        "'{}', 'ok', 0, 0, false, 0, 1, :now, :ref)"),
                        {"id": call_id, "ref": ref, "now": "2026-01-01"})
            command.upgrade(cfg, "head")
            with engine.connect() as conn:
                refs = dict(conn.execute(text("SELECT id, prompt_ref FROM llm_calls")).all())
                kept = set(conn.execute(text("SELECT hash FROM prompt_blocks")).scalars())
            assert refs == {1: b, 2: None, 3: None, 4: None}
            assert kept == {a, b}
            for statement in (
                "UPDATE llm_calls SET prompt_ref = 'e' WHERE id = 4",
                f"INSERT INTO prompt_blocks (hash, parent, text) VALUES ('n', '{lost}', 'x')",
                f"DELETE FROM prompt_blocks WHERE hash = '{b}'",
            ):
                with pytest.raises(IntegrityError), engine.begin() as conn:
                    conn.execute(text(statement))
            command.downgrade(cfg, "0012")
            with engine.begin() as conn:
                conn.execute(text("UPDATE llm_calls SET prompt_ref = 'e' WHERE id = 4"))
                conn.execute(text(f"DELETE FROM prompt_blocks WHERE hash = '{b}'"))
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0014_adds_tasks_worker_and_nodes_reason_and_drops_them_keeping_the_rows(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from alembic import command
    from sqlalchemy import inspect

    from adapt.store.migrate import alembic_config

    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0013")
        engine = create_engine(_sync_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(text(
                    "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                    "strategy, profile, d_max, run_config, executor_model, planner_model, "
                    "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                    "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                    "last_seq, created_at, updated_at) VALUES ('t1', 'x', 'queued', "
                    "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', 'sim:a', true, "
                    "true, 0, 0, 0, 0, 0, false, 0, 0, :now, :now)"), {"now": "2026-01-01"})
                conn.execute(text(
                    "INSERT INTO events (task_id, seq, type, payload, created_at) "
                    "VALUES ('t1', 1, 'node.created', '{}', :now)"), {"now": "2026-01-01"})
            command.upgrade(cfg, "head")
            assert "worker" in {c["name"] for c in inspect(engine).get_columns("tasks")}
            assert "reason" in {c["name"] for c in inspect(engine).get_columns("nodes")}
            with engine.begin() as conn:
                conn.execute(text("UPDATE tasks SET worker = 'host:1:a'"))
            command.downgrade(cfg, "0013")
            assert "worker" not in {c["name"] for c in inspect(engine).get_columns("tasks")}
            assert "reason" not in {c["name"] for c in inspect(engine).get_columns("nodes")}
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM events")).scalar_one() == 1
                assert conn.execute(text("SELECT id FROM tasks")).scalar_one() == "t1"
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0015_adds_the_growth_indexes_and_the_metrics_totals_and_drops_them_keeping_the_rows(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from alembic import command
    from sqlalchemy import inspect

    from adapt.store.migrate import alembic_config

    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0014")
        engine = create_engine(_sync_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(text(
                    "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                    "strategy, profile, d_max, run_config, executor_model, planner_model, "
                    "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                    "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                    "last_seq, created_at, updated_at) VALUES ('t1', 'x', 'succeeded', "
                    "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', 'sim:a', true, "
                    "true, 0, 0, 0, 0, 0, false, 0, 0, :now, :now)"), {"now": "2026-01-01"})
                conn.execute(text(
                    "INSERT INTO events (task_id, seq, type, payload, created_at) "
                    "VALUES ('t1', 1, 'node.created', '{}', :now)"), {"now": "2026-01-01"})
            command.upgrade(cfg, "head")
            indexes = {i["name"] for i in inspect(engine).get_indexes("tasks")}
            assert {"ix_tasks_tenant_environment", "ix_tasks_tenant_strategy",
                    "ix_tasks_tenant_status", "ix_tasks_metrics_live"} <= indexes
            with engine.connect() as conn:
                # an existing task is not in the running totals yet: the first scrapes fold it
                assert conn.execute(text(
                    "SELECT count(*) FROM tasks WHERE NOT metrics_folded")).scalar_one() == 1
                assert conn.execute(text("SELECT name FROM metrics_rollup")).scalar_one() \
                    == "metrics"
            command.downgrade(cfg, "0014")
            assert "metrics_folded" not in {c["name"] for c in inspect(engine).get_columns("tasks")}
            assert "metrics_rollup" not in inspect(engine).get_table_names()
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM events")).scalar_one() == 1
                assert conn.execute(text("SELECT id FROM tasks")).scalar_one() == "t1"
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0020_rows_of_several_events_split_on_downgrade_and_rows_of_one_read_as_they_are(
        backend: str, tmp_path: Path) -> None:
    """A task stored at head (a row per write, packed; new nodes sparse) reads the same after
    a downgrade to 0019 (one row per event, every snapshot whole, as that code reads them)
    and an upgrade again (the rows of one event read as they are)."""
    import asyncio

    from alembic import command

    from adapt.engine.events import FanoutSink, MemorySink
    from adapt.store.db import create_engine as create_async_engine
    from adapt.store.db import session_factory
    from adapt.store.event_log import read_events
    from adapt.store.migrate import alembic_config
    from adapt.store.sink import DbSink
    from benchmarks.perfkit import OWNER, leased_task, run_textcraft

    async def run(url: str) -> tuple[str, int]:
        engine = create_async_engine(url)
        try:
            sessions = session_factory(engine)
            task_id, attempt = await leased_task(sessions, 11)
            memory = MemorySink()
            await run_textcraft(11, FanoutSink([memory, DbSink(sessions, task_id, attempt,
                                                               OWNER)]))
        finally:
            await engine.dispose()
        return task_id, len(memory.events)

    def read(url: str, task_id: str, since: int = 0) -> list[tuple[int, str, object]]:
        async def go() -> list[tuple[int, str, object]]:
            engine = create_async_engine(url)
            try:
                async with session_factory(engine)() as session:
                    events = await read_events(session, task_id, since, None)
            finally:
                await engine.dispose()
            return [(e.seq, e.type, e.data) for e in events]
        return asyncio.run(go())

    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "head")
        task_id, count = asyncio.run(run(url))
        expected = read(url, task_id)
        assert len(expected) == count
        engine = create_engine(_sync_url(url))
        try:
            with engine.connect() as conn:
                grouped = conn.execute(text(
                    "SELECT count(*) FROM events WHERE span > 1 AND packed IS NOT NULL "
                    "AND payload IS NULL")).scalar_one()
            assert 0 < grouped < count / 2
            command.downgrade(cfg, "0019")
            with engine.connect() as conn:
                rows = conn.execute(text(
                    "SELECT seq, type, payload, node_id FROM events WHERE task_id = :t "
                    "ORDER BY seq"), {"t": task_id}).all()
            assert [r.seq for r in rows] == list(range(1, count + 1))
            payloads = [(r.type, json.loads(r.payload) if isinstance(r.payload, str)
                         else r.payload, r.node_id) for r in rows]
            created = [(p, n) for t, p, n in payloads if t == "node.created"]
            assert created and all(set(p) == {"node"} and p["node"]["id"] == n
                                   and "steps_count" in p["node"] for p, n in created)
            assert all(set(p) == {"node_id", "changed"} and p["node_id"] == n
                       for t, p, n in payloads if t == "node.updated")
            command.upgrade(cfg, "head")
            assert read(url, task_id) == expected
            assert read(url, task_id, 7) == expected[7:]
        finally:
            engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0021_values_stored_once_read_the_same_and_the_downgrade_writes_them_whole(
        backend: str, tmp_path: Path) -> None:
    """The upgrade rewrites no row (expand/contract): rows written at 0020 (a call that
    recorded no request model, a step whose text is not its raw, a monitor record of floats)
    are stored and read as they were. A task stored at head (step texts, request models, clean
    monitor records and plans' raws stored once) reads the same through the event log, the
    archive, replay, the journal and the node detail after a downgrade to 0020 (every value
    whole, as that code reads them) and an upgrade again."""
    import asyncio

    from alembic import command
    from sqlalchemy import inspect

    from adapt.store import archive, queries
    from adapt.store.db import create_engine as create_async_engine
    from adapt.store.db import session_factory
    from adapt.store.event_log import read_events
    from adapt.store.journal import split_steps
    from adapt.store.migrate import alembic_config
    from adapt.store.sink import DbSink
    from adapt.store.task_rows import replay_material_in
    from benchmarks.perfkit import OWNER, leased_task, run_textcraft

    async def run(url: str) -> str:
        engine = create_async_engine(url)
        try:
            sessions = session_factory(engine)
            task_id, attempt = await leased_task(sessions, 5)
            await run_textcraft(5, DbSink(sessions, task_id, attempt, OWNER))
        finally:
            await engine.dispose()
        return task_id

    def views(url: str, task_id: str) -> dict[str, object]:
        async def go() -> dict[str, object]:
            engine = create_async_engine(url)
            try:
                async with session_factory(engine)() as session:
                    events = await read_events(session, task_id, 0, None)
                    document = await archive.read_task(session, task_id)
                    replay = await replay_material_in(session, task_id)
                    journal = await split_steps(session, task_id, 3)
            finally:
                await engine.dispose()
            return {"events": [(e.seq, e.type, e.data) for e in events],
                    "archive": document, "replay": replay, "journal": journal}
        return asyncio.run(go())

    def node_views(url: str, task_id: str) -> list[tuple[int, object]]:
        """The plans the node detail shows (through ``queries.get_node``, or the rows as
        they are stored, whole, at 0020)."""
        async def go() -> list[tuple[int, object]]:
            engine = create_async_engine(url)
            try:
                async with session_factory(engine)() as session:
                    ids = (await session.execute(text(
                        "SELECT id FROM nodes WHERE task_id = :t ORDER BY id"),
                        {"t": task_id})).scalars().all()
                    out = []
                    for node_id in ids:
                        if pending(url):  # below head: the columns as stored
                            plan = (await session.execute(text(
                                "SELECT plan FROM nodes WHERE task_id = :t AND id = :n"),
                                {"t": task_id, "n": node_id})).scalar_one()
                            plan = json.loads(plan) if isinstance(plan, str) else plan
                        else:
                            row = await queries.get_node(session, task_id, node_id)
                            plan = row.plan if row is not None else None
                        out.append((int(node_id), plan))
            finally:
                await engine.dispose()
            return out
        return asyncio.run(go())

    def stored(conn: object, sql: str) -> list[tuple[object, ...]]:
        rows = conn.execute(text(sql)).all()  # type: ignore[attr-defined]
        return [tuple(json.loads(v) if isinstance(v, str) and v[:1] in ("{", "[") else v
                      for v in row) for row in rows]

    clean = {"validations": 1, "violations": 0, "corrections": 0}
    floats = {"validations": 1.0, "violations": 0, "corrections": 0}
    with _old_db(backend, tmp_path) as url:
        cfg = alembic_config(url)
        command.upgrade(cfg, "0020")
        engine = create_engine(_sync_url(url))
        try:
            with engine.begin() as conn:  # rows as the code of 0020 wrote them
                conn.execute(text(
                    "INSERT INTO tasks (id, tenant, status, environment, environment_config, "
                    "strategy, profile, d_max, run_config, executor_model, planner_model, "
                    "executor_simulated, planner_simulated, llm_calls, prompt_tokens, "
                    "completion_tokens, nodes_count, max_depth, cancel_requested, attempt, "
                    "last_seq, created_at, updated_at) VALUES ('old', 'x', 'succeeded', "
                    "'textcraft', '{}', 'adapt', 'default', 3, '{}', 'sim:a', 'sim:a', true, "
                    "true, 3, 0, 0, 1, 1, false, 1, 0, :now, :now)"), {"now": "2026-01-01"})
                conn.execute(text(
                    "INSERT INTO nodes (task_id, id, position, depth, kind, goal, status, "
                    "steps_count, usage, updated_at) VALUES ('old', 1, 0, 1, 'task', 'g', "
                    "'succeeded', 2, '{}', :now)"), {"now": "2026-01-01"})
                for index, raw, text_ in ((1, "get 1 log", "get 1 log"),
                                          (2, "> get 1 log", "get 1 log")):
                    conn.execute(text(
                        'INSERT INTO steps (task_id, node_id, "index", kind, raw, text, '
                        "observation, reward, done) VALUES ('old', 1, :i, 'action', :raw, "
                        ":text, 'ok', 0, false)"), {"i": index, "raw": raw, "text": text_})
                for call_id, asked, monitor in ((1, None, clean), (2, "sim:a", floats),
                                                (3, "sim:b", None)):
                    conn.execute(text(
                        "INSERT INTO llm_calls (task_id, id, node_id, role, model, "
                        "request_model, simulated, stop, request_fingerprint, response, "
                        "completion, prompt_tokens, completion_tokens, usage_estimated, "
                        "latency_s, retries, attempt, created_at, monitor) VALUES ('old', :id, "
                        "1, 'executor', 'sim:a', :asked, true, '[]', 'f', '{}', 'c', 0, 0, "
                        "false, 0, 0, 1, :now, :monitor)"),
                        {"id": call_id, "asked": asked, "now": "2026-01-01",
                         "monitor": None if monitor is None else json.dumps(monitor)})
            old_rows = ("SELECT s.text, c.request_model, c.monitor FROM llm_calls c "
                        "LEFT JOIN steps s ON s.task_id = c.task_id AND s.\"index\" = c.id "
                        "WHERE c.task_id = 'old' ORDER BY c.id")
            with engine.connect() as conn:
                at_0020 = stored(conn, old_rows)
            command.upgrade(cfg, "head")
            assert "ix_tasks_tenant" not in {i["name"] for i in inspect(engine).get_indexes(
                "tasks")}
            with engine.connect() as conn:
                assert stored(conn, old_rows) == at_0020  # as they were
            old = views(url, "old")
            assert [c["request_model"] for c in old["archive"]["calls"]] == [  # type: ignore[index]
                None, "sim:a", "sim:b"]
            assert [c["monitor"] for c in old["archive"]["calls"]] == [  # type: ignore[index]
                clean, floats, None]
            assert [s["text"] for s in old["archive"]["steps"]] == [  # type: ignore[index]
                "get 1 log", "get 1 log"]

            task_id = asyncio.run(run(url))
            expected = views(url, task_id)
            with engine.connect() as conn:
                once = conn.execute(text(
                    "SELECT count(*) FROM steps WHERE text IS NULL")).scalar_one()
                plans = stored(conn, f"SELECT plan FROM nodes WHERE task_id = '{task_id}' "
                                     "AND plan IS NOT NULL")
            assert once > 0
            assert plans and all("raw" not in p and "raw_call" in p for (p,) in plans)
            node_detail = node_views(url, task_id)
            command.downgrade(cfg, "0020")
            assert "ix_tasks_tenant" in {i["name"] for i in inspect(engine).get_indexes("tasks")}
            with engine.connect() as conn:
                assert stored(conn, old_rows) == at_0020
                whole = stored(conn, "SELECT count(*), count(text), "
                               "sum(CASE WHEN text = raw THEN 1 ELSE 0 END) FROM steps")
                assert whole[0][0] == whole[0][1] == whole[0][2] + 1  # (the old one's step 2)
                calls = stored(conn, f"SELECT model, request_model, monitor FROM llm_calls "
                                     f"WHERE task_id = '{task_id}'")
            assert calls and all(m == r and mon == clean for m, r, mon in calls)
            with engine.connect() as conn:
                plans = stored(conn, f"SELECT plan FROM nodes WHERE task_id = '{task_id}' "
                                     "AND plan IS NOT NULL")
            assert plans and all("raw" in p and "raw_call" not in p for (p,) in plans)
            assert node_views(url, task_id) == node_detail  # as the code of 0020 reads it
            command.upgrade(cfg, "head")
            assert views(url, task_id) == expected  # whole now, read the same
            assert node_views(url, task_id) == node_detail
            assert views(url, "old") == old
        finally:
            engine.dispose()
