"""Approvals and forks in a real browser against ``adapt serve`` and a slow simulated model:
the task page shows what waits, an edit the API refuses names the field, an edit, a rejection
and an approval go through; a finished task's node panel forks it and opens the compare view on
the pair."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.simserver import SimServer
from tests.ui.harness import Server, slow_task, wait_for

pytestmark = pytest.mark.slow


def pending(server: Server, task_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = server.get(
        f"/tasks/{task_id}/approvals?status=pending")["items"]
    return items


def test_approve_reject_and_edit_from_the_task_page(page: Any, server: Server,
                                                   sim: SimServer) -> None:
    task = server.submit(slow_task(sim, seed=11, d_max=3, approval={"plans": True}))
    task_id = task["id"]
    wait_for(lambda: pending(server, task_id), 60, "the first plan to wait")
    # the task list filters the tasks that wait
    page.goto(f"{server.url}/ui?status=waiting")
    page.wait_for_selector(f"tr[data-task-id='{task_id}'][data-status='waiting']")
    page.goto(f"{server.url}/ui/tasks/{task_id}")
    page.wait_for_selector("#approvals .approval")
    assert "waiting" in page.inner_text(".task-head")
    # the goal the environment chose is shown while the task waits (resolved_goal)
    waiting = server.get(f"/tasks/{task_id}")
    assert waiting["goal"] is None and waiting["resolved_goal"], waiting
    assert page.inner_text(".task-goal") == waiting["resolved_goal"]
    assert waiting["resolved_goal"] == server.get(f"/tasks/{task_id}/tree")["tree"]["goal"]
    (first,) = pending(server, task_id)
    card = page.locator(f".approval[data-approval-id='{first['id']}']")
    assert card.locator(".approval-steps").input_value().splitlines() == first["proposal"]["steps"]

    # a bad edit: the API's 422 is shown, naming the field; nothing is decided
    card.locator(".approval-order").fill("Step 1 AND Step 99")
    card.locator(".approval-edit").click()
    page.wait_for_selector(".approval-problem .problem")
    assert "proposal.execution_order" in card.locator(".approval-problem").inner_text()
    assert pending(server, task_id)[0]["id"] == first["id"]

    # reject with a reason: the planner plans again, and the new plan waits
    card.locator(".approval-reason").fill("shorter, please")
    card.locator(".approval-reject").click()
    second = wait_for(lambda: [a for a in pending(server, task_id) if a["id"] != first["id"]],
                      60, "the planner's second plan")[0]
    assert second["number"] == 2
    decided = server.get(f"/tasks/{task_id}/approvals")["items"][0]
    assert decided["status"] == "rejected" and decided["reason"] == "shorter, please"
    page.wait_for_selector(f".approval[data-approval-id='{second['id']}']", timeout=30_000)

    # edit: keep the steps, run them in the order given
    card = page.locator(f".approval[data-approval-id='{second['id']}']")
    steps = second["proposal"]["steps"]
    order = "(" + " AND ".join(f"Step {i}" for i in range(1, len(steps) + 1)) + ")"
    if order == second["proposal"]["execution_order"]:  # an edit that changes the order
        order = "(" + " OR ".join(f"Step {i}" for i in range(len(steps), 0, -1)) + ")"
    card.locator(".approval-order").fill(order)
    card.locator(".approval-edit").click()
    wait_for(lambda: server.get(f"/tasks/{task_id}/approvals")["items"][1]["status"]
             == "edited", 30, "the edit to be recorded")

    # approve whatever else waits, from the page, until the task ends
    def step() -> bool:
        task = server.get(f"/tasks/{task_id}")
        if task["finished"]:
            return True
        button = page.locator("#approvals .approval-approve")
        if button.count():
            button.first.click()
        return False

    wait_for(step, 180, "the task to finish")
    assert server.get(f"/tasks/{task_id}")["status"] in ("succeeded", "failed")

    # the node panel shows each decision: what, who, when, why, and what changed
    decided = [a for a in server.get(f"/tasks/{task_id}/approvals")["items"]
               if a["node_id"] == first["node_id"]]
    page.goto(f"{server.url}/ui/tasks/{task_id}?node={first['node_id']}")
    page.wait_for_selector(f"#node-panel .decision[data-approval-id='{second['id']}']")
    rows = page.locator("#node-panel .decisions > li.decision")
    assert rows.count() == len(decided)
    rejected = page.locator(f"#node-panel .decision[data-approval-id='{first['id']}']")
    assert "rejected" in rejected.locator(".status").inner_text()
    assert rejected.locator(".decision-reason").inner_text() == "Reason: shorter, please"
    assert rejected.locator("time.decision-when").get_attribute("datetime") == \
        decided[0]["decided_at"]
    assert "by the open API" in rejected.locator(".decision-who").inner_text()
    edited = page.locator(f"#node-panel .decision[data-approval-id='{second['id']}']")
    assert "edited" in edited.locator(".status").inner_text()
    record = server.get(f"/tasks/{task_id}/approvals")["items"][1]
    fields = edited.locator(".decision-changes dt").all_inner_texts()
    assert fields == sorted(record["changes"]) and "execution_order" in fields
    after = edited.locator(".decision-changes .change-after").all_inner_texts()
    assert record["changes"]["execution_order"]["after"] in after
    assert page.js_errors == []


def test_fork_from_the_node_panel_opens_the_compare_view(page: Any, server: Server,
                                                         sim: SimServer) -> None:
    task = server.submit(slow_task(sim, seed=5, d_max=2))
    task_id = task["id"]
    wait_for(lambda: server.get(f"/tasks/{task_id}")["finished"], 120, "the task to finish")
    page.goto(f"{server.url}/ui/tasks/{task_id}?node=1")
    page.wait_for_selector("#node-panel[data-node-id='1'] .fork")
    page.click("#node-panel .fork")
    page.wait_for_url("**/ui/compare?a=*&b=*", timeout=30_000)
    fork_id = page.url.split("b=")[1].split("&")[0]
    fork = server.get(f"/tasks/{fork_id}")
    assert fork["forked_from"] == {"task_id": task_id, "node_id": 1}
    wait_for(lambda: server.get(f"/tasks/{fork_id}")["finished"], 120, "the fork to finish")
    page.goto(f"{server.url}/ui/tasks/{fork_id}")
    page.wait_for_selector(".forked-from a")
    assert task_id[:8] in page.inner_text(".forked-from")
    assert page.js_errors == []


def test_edit_a_tool_calls_arguments_from_the_task_page(page: Any, server: Server,
                                                        sim: SimServer) -> None:
    """The tools executor asks before each craft: the card shows the call's arguments as JSON;
    text that is not JSON is refused in place, arguments the tool's schema refuses show the
    API's 422 naming the field, and an edit goes through and shows on the node's step."""
    body = slow_task(sim, seed=3, d_max=2, approval={"actions": ["craft"]},
                     planner={"output": "json"})
    body["executor"] = {**body["executor"], "kind": "tools"}
    task_id = server.submit(body)["id"]
    (item,) = wait_for(lambda: pending(server, task_id), 90, "a craft to wait")
    page.goto(f"{server.url}/ui/tasks/{task_id}")
    card = page.locator(f".approval[data-approval-id='{item['id']}']")
    card.wait_for()
    box = card.locator(".approval-arguments")
    assert json.loads(box.input_value()) == item["proposal"]["arguments"]

    box.fill("{not json")
    card.locator(".approval-edit").click()
    page.wait_for_selector(".approval-problem .problem")
    assert "not JSON" in card.locator(".approval-problem").inner_text()
    box.fill(json.dumps({**item["proposal"]["arguments"], "count": 0}))
    card.locator(".approval-edit").click()
    card.locator(".approval-problem code", has_text="proposal.arguments.count").wait_for()
    assert pending(server, task_id)[0]["id"] == item["id"], "nothing was decided"

    edited = {**item["proposal"]["arguments"], "count": item["proposal"]["arguments"]["count"] + 1}
    box.fill(json.dumps(edited))
    card.locator(".approval-edit").click()
    decided = wait_for(lambda: [a for a in server.get(f"/tasks/{task_id}/approvals")["items"]
                                if a["id"] == item["id"] and a["status"] == "edited"],
                       30, "the edit to be recorded")[0]
    assert decided["edited"] == {"name": "craft", "arguments": edited}

    def step() -> bool:  # approve the later crafts as they are
        if server.get(f"/tasks/{task_id}")["finished"]:
            return True
        for later in pending(server, task_id):
            httpx.post(f"{server.url}/tasks/{task_id}/approvals/{later['id']}",
                       json={"decision": "approve"}, timeout=10).raise_for_status()
        return False

    wait_for(step, 180, "the task to finish")
    page.goto(f"{server.url}/ui/tasks/{task_id}?node={item['node_id']}")
    page.wait_for_selector("#node-panel .edited-step")
    shown = page.locator("#node-panel li.step", has=page.locator(".edited-step"))
    assert shown.count() == 1
    call = shown.locator(".tool-call").inner_text()
    assert call.startswith("craft(") and json.loads(call[len("craft("):-1]) == edited
    assert shown.locator(".proposed-call").inner_text().startswith("craft(")
    decision = page.locator(f"#node-panel .decision[data-approval-id='{item['id']}']")
    assert decision.locator(".decision-changes dt").all_inner_texts() == ["arguments"]
    assert page.js_errors == []
