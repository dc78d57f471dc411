"""GET /tasks/{id}/tree (nested, ETag, constant queries) and GET /tasks/{id}/nodes/{node_id}."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import event, select

from adapt.store.models import LLMCallRow, NodeRow, StepRow
from api.deps import KeysCache
from tests.api.apiutil import count_rows, create, insert_tree, run_engine, sessions_of

NODE_KEYS = {"id", "kind", "goal", "depth", "logic", "status", "executor_success", "success",
             "reward", "steps_count", "usage", "children", "claim", "verdict", "evidence"}


def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node["children"]:
        yield from walk(child)


@contextmanager
def count_statements(app: FastAPI) -> Iterator[list[str]]:
    statements: list[str] = []

    def listener(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = app.state.engine.sync_engine
    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", listener)


async def test_tree_is_null_before_the_first_node(client: httpx.AsyncClient) -> None:
    task = await create(client)
    response = await client.get(f"/tasks/{task['id']}/tree")
    assert response.status_code == 200
    assert response.json() == {"task_id": task["id"], "status": "queued", "finished": False,
                               "success": None, "reward": None, "last_seq": 0,
                               "nodes_count": 0, "tree": None}


async def test_tree_of_a_real_run_is_nested_and_complete(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client, {"environment": "textcraft", "environment_config": {"seed": 3}})
    await run_engine(app, task["id"], config={"seed": 3}, d_max=3)
    body = (await client.get(f"/tasks/{task['id']}/tree")).json()
    assert body["status"] == "succeeded" and body["finished"] is True
    root = body["tree"]
    assert root["id"] == 1 and root["depth"] == 1 and root["kind"] == "task"
    nodes = list(walk(root))
    assert len(nodes) == body["nodes_count"] == await count_rows(app, NodeRow)
    assert len(nodes) > 1, "capability=1 on a depth>=2 game must decompose"
    for node in nodes:
        assert node.keys() >= NODE_KEYS
        assert set(node["usage"]) == {"llm_calls", "prompt_tokens", "completion_tokens",
                                      "cost_usd"}
        positions = [c["position"] for c in node["children"]]
        assert positions == sorted(positions)
        for child in node["children"]:
            assert child["parent_id"] == node["id"]
            assert child["depth"] >= node["depth"]
    assert root["success"] is True and root["executor_success"] is False
    # claim vs verdict on every task node (verification is on by default)
    # the executor claimed failure; the environment confirmed the goal once the children ran
    assert root["verdict"] == "confirmed" and root["claim"] is False
    assert all(n["verdict"] in ("confirmed", "refuted", "unknown") for n in nodes
               if n["kind"] == "task" and n["status"] in ("succeeded", "failed"))
    assert any(n["evidence"] for n in nodes if n["depth"] > 1)
    assert any(n["kind"] == "group" or n["logic"] for n in nodes)
    assert sum(n["steps_count"] for n in nodes) == await count_rows(app, StepRow)


async def test_etag_gives_304_until_something_changes(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    url = f"/tasks/{task['id']}/tree"
    first = await client.get(url)
    etag = first.headers["etag"]
    assert etag.startswith('"') and first.headers["cache-control"] == "no-cache"

    same = await client.get(url, headers={"If-None-Match": etag})
    assert same.status_code == 304 and same.content == b""
    assert same.headers["etag"] == etag
    assert (await client.get(url, headers={"If-None-Match": f"W/{etag}"})).status_code == 304
    assert (await client.get(url, headers={"If-None-Match": f'"x", {etag}'})).status_code == 304
    assert (await client.get(url, headers={"If-None-Match": '"other"'})).status_code == 200

    await insert_tree(app, task["id"], 3)  # new nodes, new events
    changed = await client.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert changed.json()["nodes_count"] == 3

    await client.post(f"/tasks/{task['id']}/cancel")  # status changes too
    after_cancel = await client.get(url, headers={"If-None-Match": changed.headers["etag"]})
    assert after_cancel.status_code == 200
    assert after_cancel.json()["status"] == "cancelled"


async def test_tree_takes_a_constant_number_of_queries(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    app.state.keys_cache = KeysCache(ttl=3600)  # auth's any_keys query: once, up front
    await client.get("/tasks")
    counts = {}
    for size in (1, 7, 150):
        task = await create(client)
        await insert_tree(app, task["id"], size)
        with count_statements(app) as statements:
            body = (await client.get(f"/tasks/{task['id']}/tree")).json()
        assert len(list(walk(body["tree"]))) == size
        counts[size] = len(statements)
    assert counts[1] == counts[7] == counts[150], counts
    assert counts[1] == 2, counts  # the task row and one nodes query


async def test_node_detail_has_plan_steps_and_calls(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    task = await create(client)
    await run_engine(app, task["id"], config={"seed": 3}, d_max=3)
    async with sessions_of(app)() as session:
        planned = (await session.execute(
            select(NodeRow.id).where(NodeRow.task_id == task["id"], NodeRow.plan.is_not(None))
            .order_by(NodeRow.id))).scalars().first()
        stepped = (await session.execute(
            select(StepRow.node_id).where(StepRow.task_id == task["id"])
            .order_by(StepRow.node_id.desc()))).scalars().first()
        calls = (await session.execute(
            select(LLMCallRow).where(LLMCallRow.task_id == task["id"],
                                     LLMCallRow.node_id == stepped))).scalars().all()
    assert planned is not None and stepped is not None

    node = (await client.get(f"/tasks/{task['id']}/nodes/{planned}")).json()
    assert node["task_id"] == task["id"] and node["id"] == planned
    plan = node["plan"]
    assert plan["raw"] and plan["steps"] and plan["expression"] is not None
    assert node["children"], "a decomposed node has children"

    leaf = (await client.get(f"/tasks/{task['id']}/nodes/{stepped}")).json()
    assert leaf["steps"] and [s["index"] for s in leaf["steps"]] == list(
        range(1, len(leaf["steps"]) + 1))
    assert {"raw", "text", "observation", "reward", "done", "kind"} <= leaf["steps"][0].keys()
    assert len(leaf["llm_calls"]) == len(calls) > 0
    call = leaf["llm_calls"][0]
    assert call["completion"] and call["role"] and call["simulated"] is True
    assert isinstance(call["stop"], list)
    assert call["prompt"] or call["messages"]
    # the decoding monitor's record is stored with every monitored call
    assert all(c["monitor"]["validations"] >= 1 for c in leaf["llm_calls"]
               if c["role"] == "executor")


async def test_tree_body_is_the_schemas_rendering(client: httpx.AsyncClient, app: FastAPI) -> None:
    """The tree is rendered from plain rows without pydantic; it is the document the
    ``TaskTree`` schema gives for the same rows, key order included."""
    from adapt.store import queries
    from api.routes.tree import build_tree
    from api.schemas import TaskTree, TreeNode

    task = await create(client, {"environment": "textcraft", "environment_config": {"seed": 3}})
    await run_engine(app, task["id"], config={"seed": 3}, d_max=3)
    async with sessions_of(app).begin() as session:
        # a node whose stored usage lacks keys reads with the schema's defaults
        await session.execute(NodeRow.__table__.update().where(
            NodeRow.task_id == task["id"], NodeRow.id == 2).values(usage={"llm_calls": 2}))
    response = await client.get(f"/tasks/{task['id']}/tree")
    async with sessions_of(app)() as session:
        row = await queries.get_task(session, "default", task["id"])
        assert row is not None
        rows = await queries.task_nodes(session, task["id"])
    expected = TaskTree(task_id=row.id, status=row.status, finished=row.finished,  # type: ignore[arg-type]
                        success=row.success, reward=row.reward, last_seq=row.last_seq,
                        nodes_count=len(rows), tree=build_tree(rows)).model_dump(mode="json")
    body = response.json()
    assert body == expected
    assert list(body) == list(TaskTree.model_fields)
    assert all(list(n) == list(TreeNode.model_fields) for n in walk(body["tree"]))
    assert response.headers["content-type"] == "application/json"


async def test_a_finished_tree_is_served_from_its_rendered_bytes(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    """A finished task's tree is rendered once per ETag: later reads take the task row only
    and get the same bytes as a fresh render; a changed task is rendered again."""
    app.state.keys_cache = KeysCache(ttl=3600)
    task = await create(client)
    await run_engine(app, task["id"], config={"seed": 3}, d_max=3)
    url = f"/tasks/{task['id']}/tree"
    first = await client.get(url)
    etag = first.headers["etag"]
    assert app.state.rendered_trees.get(etag) == first.content
    with count_statements(app) as statements:
        again = await client.get(url)
    assert again.content == first.content and again.headers["etag"] == etag
    assert len(statements) == 1, statements  # the task row (tenant check, ETag)
    app.state.rendered_trees = type(app.state.rendered_trees)()  # forget: a fresh render
    assert (await client.get(url)).content == first.content
    await client.post(f"/tasks/{task['id']}/resume")  # not resumable: the same tree stays
    running = await create(client)
    await insert_tree(app, running["id"], 3)
    await client.get(f"/tasks/{running['id']}/tree")
    assert len(app.state.rendered_trees._bodies) == 1  # a running task's tree is not kept
