"""``approval.parallel_siblings`` over HTTP with a real worker (``execute_task``) on SQLite and
PostgreSQL: 8 sibling nodes wait at once, ``GET /tasks/{id}/approvals`` lists all 8, the
decisions come in a shuffled order, each one queues the task again, and the task ends
succeeded with no LLM call paid twice. A strategy with no plan refuses the option (422)."""

from __future__ import annotations

import random
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from adapt.llm.base import ChatRequest
from adapt.llm.recording import request_fingerprint
from adapt.llm.testing import FunctionModel
from adapt.service import approvals as approval_service
from adapt.service.execute import execute_task
from adapt.settings import Settings
from adapt.store.models import ApprovalRow
from tests.api.apiutil import create, sessions_of
from tests.service.test_execute import make_ctx
from tests.support.api import FakeDispatcher

FAIL = "think: I cannot do this. Task failed!"
DONE = "think: Task completed!"
ERRANDS = [f"errand {k}" for k in range(1, 9)]
PLAN = "\n".join([*(f"Step {i}: {s}" for i, s in enumerate(ERRANDS, 1)),
                  "Execution Order: (" + " AND ".join(f"Step {i}" for i in range(1, 9)) + ")"])
BODY: dict[str, Any] = {
    "environment": "textcraft", "environment_config": {"seed": 11},
    "goal": "run eight errands", "d_max": 2,
    "approval": {"actions": ["inventory"], "parallel_siblings": True}}


def reply(request: ChatRequest) -> str:
    """The planner plans 8 errands; the root's executor fails; an errand's executor looks at
    the inventory (asked about), again after a rejection, and is done once it saw it."""
    if request.role == "planner":
        return PLAN
    prompt = request.as_prompt()
    mentioned = [(prompt.rindex(e), e) for e in ERRANDS if e in prompt]
    if not mentioned:
        return FAIL
    tail = prompt[max(mentioned)[0]:]
    return DONE if "Inventory:" in tail else "inventory"


class Counted(FunctionModel):
    """Counts every live call by its request; a request sent twice is a call paid again."""

    def __init__(self, seen: dict[str, int]) -> None:
        super().__init__(reply, "errands")
        self.seen = seen

    async def complete(self, request: ChatRequest) -> Any:
        key = request_fingerprint(request)
        self.seen[key] = self.seen.get(key, 0) + 1
        return await super().complete(request)


async def work(settings: Settings, task_id: str, model: Counted) -> str | None:
    ctx = make_ctx(settings.database_url, "api-test-worker", model)
    try:
        return await execute_task(ctx, task_id)
    finally:
        await ctx.aclose()


async def test_eight_pending_approvals_answered_in_shuffled_order(
    client: httpx.AsyncClient, app: FastAPI, settings: Settings, dispatcher: FakeDispatcher,
) -> None:
    seen: dict[str, int] = {}
    task = await create(client, BODY)
    url = f"/tasks/{task['id']}"
    assert await work(settings, task["id"], Counted(seen)) == "waiting"
    listed = (await client.get(f"{url}/approvals")).json()["items"]
    assert len(listed) == 8 and {i["status"] for i in listed} == {"pending"}
    assert sorted(i["node_id"] for i in listed) == list(range(2, 10))
    tree = (await client.get(f"{url}/tree")).json()["tree"]
    assert [c["status"] for c in tree["children"]] == ["awaiting_approval"] * 8
    assert (await client.get(url)).json()["status"] == "waiting"
    evs = (await client.get(f"{url}/events", params={"since": 0})).json()["events"]
    requested = [e["data"]["approval_id"] for e in evs if e["type"] == "approval.requested"]
    assert sorted(requested) == sorted(i["id"] for i in listed), "one event per request"

    rng = random.Random(30)
    order = list(listed)
    rng.shuffle(order)
    decisions = ["approve", "reject", "edit", "approve", "approve", "reject", "approve",
                 "edit"]
    rejected_nodes = set()
    for n, (item, decision) in enumerate(zip(order, decisions, strict=True)):
        body: dict[str, Any] = {"decision": decision}
        if decision == "reject":
            body["reason"] = "not now"
            rejected_nodes.add(item["node_id"])
        if decision == "edit":
            body["proposal"] = {"action": "inventory"}
        dispatcher.dispatched.clear()
        was = (await client.get(url)).json()["status"]
        r = await client.post(f"{url}/approvals/{item['id']}", json=body)
        assert r.status_code == 200, r.text
        # each decision queues a waiting task again (a queued one is queued already)
        assert dispatcher.dispatched == ([task["id"]] if was == "waiting" else []), was
        assert (await client.get(url)).json()["status"] == "queued"
        if n % 3 == 2:  # the worker runs after some decisions, not after others
            assert await work(settings, task["id"], Counted(seen)) == "waiting"
    # the rejected ones asked again; answered (approve) as they come
    while (status := await work(settings, task["id"], Counted(seen))) == "waiting":
        pending = (await client.get(f"{url}/approvals",
                                    params={"status": "pending"})).json()["items"]
        assert pending and {i["node_id"] for i in pending} <= rejected_nodes
        for item in pending:
            r = await client.post(f"{url}/approvals/{item['id']}", json={"decision": "approve"})
            assert r.status_code == 200, r.text
    assert status == "succeeded"
    detail = (await client.get(url)).json()
    assert detail["status"] == "succeeded"
    assert all(v == 1 for v in seen.values()), "a call was paid again"
    assert sum(seen.values()) == detail["usage"]["llm_calls"] == 1 + 1 + 8 * 2 + 2
    tree = (await client.get(f"{url}/tree")).json()["tree"]
    assert [c["status"] for c in tree["children"]] == ["succeeded"] * 8
    async with sessions_of(app)() as session:
        rows = (await session.execute(select(ApprovalRow).where(
            ApprovalRow.task_id == task["id"]))).scalars().all()
    numbers = sorted(r.decided_seq for r in rows if r.decided_seq is not None)
    assert numbers == list(range(1, 11)), "decisions are numbered 1, 2, ... as stored"
    first = {r.id: r.decided_seq for r in rows}
    assert [first[i["id"]] for i in order] == list(range(1, 9))


async def test_a_strategy_without_a_plan_refuses_the_option(client: httpx.AsyncClient) -> None:
    for strategy in ("react", "try_again"):
        r = await client.post("/tasks", json={**BODY, "strategy": strategy})
        assert r.status_code == 422, r.text
        assert [e["field"] for e in r.json()["errors"]] == ["approval.parallel_siblings"]
    r = await client.post("/tasks", json={**BODY, "approval": {"parallel_siblings": "yes"}})
    assert r.status_code == 422
    assert [e["field"] for e in r.json()["errors"]] == ["approval.parallel_siblings"]
    assert (await client.post("/tasks", json={**BODY, "strategy": "plan_and_execute"})
            ).status_code == 202


async def test_a_decision_made_while_an_attempt_runs_is_not_lost(
    client: httpx.AsyncClient, app: FastAPI, settings: Settings, monkeypatch: Any,
) -> None:
    """A decision posted while an attempt of the task runs (the attempt read the decisions
    before it): when that attempt stops, the task is queued again at once."""
    seen: dict[str, int] = {}
    task = await create(client, BODY)
    url = f"/tasks/{task['id']}"
    assert await work(settings, task["id"], Counted(seen)) == "waiting"
    first, second, *_ = (await client.get(f"{url}/approvals")).json()["items"]
    assert (await client.post(f"{url}/approvals/{first['id']}",
                              json={"decision": "approve"})).status_code == 200
    real_wait = approval_service.wait

    async def decided_meanwhile(*args: Any, **kwargs: Any) -> str | None:
        r = await client.post(f"{url}/approvals/{second['id']}", json={"decision": "approve"})
        assert r.status_code == 200, r.text
        return await real_wait(*args, **kwargs)

    monkeypatch.setattr(approval_service, "wait", decided_meanwhile)
    assert await work(settings, task["id"], Counted(seen)) == "queued"
    monkeypatch.setattr(approval_service, "wait", real_wait)
    assert (await client.get(url)).json()["status"] == "queued"
    assert await work(settings, task["id"], Counted(seen)) == "waiting"
    tree = (await client.get(f"{url}/tree")).json()["tree"]
    done = {c["id"]: c["status"] for c in tree["children"]}
    assert done[first["node_id"]] == done[second["node_id"]] == "succeeded"
    assert list(done.values()).count("awaiting_approval") == 6
    assert all(v == 1 for v in seen.values()), "a call was paid again"
