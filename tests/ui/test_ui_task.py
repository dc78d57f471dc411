"""The task page in a real browser against ``adapt serve`` and a slow simulated model: the tree
grows live, a node's panel shows its LLM calls, the event stream survives dropped connections
and reloads without losing or repeating events, and cancel works."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.simserver import SimServer
from tests.ui.harness import DropProxy, Server, slow_task, wait_for

pytestmark = pytest.mark.slow


def rows(page: Any) -> dict[int, str]:
    """The tree rows in the DOM: node id -> status."""
    found: dict[int, str] = page.eval_on_selector_all(
        ".tree-row", "rs => Object.fromEntries(rs.map(r => [r.dataset.nodeId, r.dataset.status]))")
    return {int(k): v for k, v in found.items()}


def api_nodes(server: Server, task_id: str) -> dict[int, str]:
    tree = server.get(f"/tasks/{task_id}/tree")["tree"]
    out: dict[int, str] = {}
    stack = [tree] if tree else []
    while stack:
        n = stack.pop()
        out[n["id"]] = n["status"]
        stack.extend(n["children"])
    return out


def applied_seqs(page: Any) -> list[int]:
    return list(page.evaluate("window.adaptEventLog || []"))


def test_tree_grows_live_survives_drops_and_reloads(page: Any, server: Server, sim: SimServer,
                                                     proxy: DropProxy) -> None:
    task = server.submit(slow_task(sim, seed=11))
    task_id = task["id"]
    page.goto(f"{proxy.url}/ui/tasks/{task_id}")
    page.wait_for_selector("main[data-loaded]")
    page.wait_for_selector(".live[data-state=live]")

    # nodes appear while the task runs: the row count grows without a reload
    first = wait_for(lambda: len(rows(page)) >= 1 and len(rows(page)), 60, "the first node")
    wait_for(lambda: len(rows(page)) > first, 90, "more nodes to appear live")
    assert not server.get(f"/tasks/{task_id}")["finished"], "the task finished too early"

    # open the root: its panel shows the node and its first LLM call as the API has it
    page.click(".tree-row[data-node-id='1'] .goal")
    page.wait_for_selector("#node-panel[data-node-id='1'] .call")
    assert page.url.endswith(f"/ui/tasks/{task_id}?node=1")
    detail = server.get(f"/tasks/{task_id}/nodes/1")
    call = detail["llm_calls"][0]
    first_call = page.locator("#node-panel .call").first
    assert call["role"] in first_call.locator(".role").inner_text()
    assert first_call.locator("pre.completion").inner_text().strip() == call["completion"].strip()
    prompt = first_call.locator("details pre.prompt")
    assert not prompt.is_visible()  # collapsed until asked for
    first_call.locator("details summary").first.click()
    assert prompt.is_visible() and "craft" in prompt.inner_text().lower()

    # a dropped connection: the stream resumes with Last-Event-ID, nothing lost or repeated
    before = len(applied_seqs(page))
    proxy.drop()
    page.wait_for_selector(".live[data-state=reconnecting]", timeout=10_000)
    page.wait_for_selector(".live[data-state=live]", timeout=20_000)
    wait_for(lambda: len(applied_seqs(page)) > before, 60, "events after the reconnect")
    seqs = applied_seqs(page)
    start = int(page.get_attribute("main", "data-start-seq") or 0)
    assert seqs == list(range(start + 1, start + 1 + len(seqs))), seqs

    # reload mid-run: the same tree, the panel deep link opens again
    assert not server.get(f"/tasks/{task_id}")["finished"], "the task finished too early"
    page.reload()
    page.wait_for_selector("#node-panel[data-node-id='1']")
    page.wait_for_selector(".live[data-state=live]")
    shown = rows(page)
    assert set(shown) <= set(api_nodes(server, task_id)) and 1 in shown

    # to the end: every event once, in order, and the DOM equals the API's tree
    page.wait_for_selector(".live[data-state=finished]", timeout=120_000)
    final = server.get(f"/tasks/{task_id}")
    assert final["status"] == "succeeded", final
    seqs = applied_seqs(page)
    start = int(page.get_attribute("main", "data-start-seq") or 0)
    assert seqs == list(range(start + 1, final["last_seq"] + 1))
    page.wait_for_selector(".title-line .status-succeeded")
    assert rows(page) == api_nodes(server, task_id)
    assert proxy.drops == 1
    assert not page.js_errors


def test_cancel_a_running_task_and_the_list_follows(page: Any, server: Server,
                                                     sim: SimServer) -> None:
    task = server.submit(slow_task(sim, seed=12))
    row = f"tr[data-task-id='{task['id']}']"
    listing = page.context.new_page()  # a second tab on the tasks list
    listing.goto(f"{server.url}/ui")
    listing.wait_for_selector(f"{row}[data-status=running]", timeout=60_000)

    page.goto(f"{server.url}/ui/tasks/{task['id']}")
    page.wait_for_selector(".tree-row")
    page.click("#cancel-task")
    page.wait_for_selector(".title-line .status-cancelled", timeout=60_000)
    assert server.get(f"/tasks/{task['id']}")["status"] == "cancelled"
    assert page.locator("#cancel-task").count() == 0
    page.wait_for_selector(".live[data-state=finished]")
    # the list tab shows the new status without a reload
    listing.wait_for_selector(f"{row}[data-status=cancelled]", timeout=10_000)
    assert not page.js_errors


def test_the_panel_of_a_running_node_keeps_what_the_reader_opened(page: Any, server: Server,
                                                                   sim: SimServer) -> None:
    # capability 3: the root's executor crafts the comparator itself, a step per second
    body = slow_task(sim, seed=11)
    body["executor"]["model"] = body["executor"]["model"].replace("capability=1", "capability=3")
    task = server.submit(body)
    page.goto(f"{server.url}/ui/tasks/{task['id']}?node=1")  # the root, while it runs
    page.wait_for_selector("#node-panel[data-node-id='1'] .call", timeout=60_000)
    page.wait_for_selector(".live[data-state=live]")
    panel = page.locator("#node-panel")
    calls = panel.locator(".call").count()
    steps = panel.locator(".step").count()
    assert page.locator("#node-panel[data-status=running]").count() == 1, "the root ended early"

    # the reader expands the first prompt and scrolls the panel down to it
    first = panel.locator(".call").first
    first.locator("details summary").first.click()
    assert first.locator("pre.prompt").is_visible()
    page.evaluate("document.getElementById('node-panel').scrollTop = 150")
    scrolled = page.evaluate("document.getElementById('node-panel').scrollTop")
    assert scrolled > 0

    # the node goes on: new steps and calls appear in the panel, the prompt stays expanded,
    # the panel stays where the reader scrolled it
    wait_for(lambda: panel.locator(".call").count() > calls
             and panel.locator(".step").count() > steps, 60, "new steps and calls in the panel")
    page.wait_for_timeout(300)  # any update in flight lands
    assert panel.locator(".call").first.locator("details").first.get_attribute("open") is not None
    assert panel.locator(".call").first.locator("pre.prompt").is_visible()
    assert page.evaluate("document.getElementById('node-panel').scrollTop") == scrolled
    assert not page.js_errors


def test_the_node_panel_shows_tool_calls(page: Any, server: Server, sim: SimServer) -> None:
    """A task of the tools executor (the simulated model over HTTP answers tool calls): each
    step names its tool and shows the call, each LLM call the tools it offered and the calls
    it got."""
    body = slow_task(sim)
    body.update(environment_config={"goal": "craft oak planks"}, d_max=1)
    body["executor"]["kind"] = "tools"
    task = server.submit(body)
    wait_for(lambda: server.get(f"/tasks/{task['id']}")["finished"], 60, "the task to finish")
    assert server.get(f"/tasks/{task['id']}")["status"] == "succeeded"
    page.goto(f"{server.url}/ui/tasks/{task['id']}?node=1")
    page.wait_for_selector("#node-panel[data-node-id='1'] .step")
    panel = page.locator("#node-panel")
    steps = panel.locator(".step")
    assert steps.count() == 2
    assert steps.nth(0).locator(".badge").inner_text() == "tool get"
    assert steps.nth(0).locator("pre.tool-call").inner_text() == (
        'get({"item":"oak logs","count":1})')
    assert steps.nth(0).locator("pre.step-text").inner_text() == "get 1 oak logs"
    assert steps.nth(1).locator(".badge", has_text="tool craft").count() == 1
    call = panel.locator(".call").first
    assert call.locator("pre.tool-calls").inner_text().startswith('get({"item": "oak logs"')
    call.locator("details summary", has_text="tools (5)").click()
    assert '"task_completed"' in call.locator("details pre").nth(1).inner_text()
    assert not page.js_errors
