"""The viewer's pages in a real browser: a 5,000-node tree, keyboard navigation, contrast, a
narrow window, the new-task form with inline problem details, markup shown as text, copy as
curl, the timeline and compare."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from typing import Any

import pytest

from tests.ui.harness import PLUGIN_EXECUTOR, Server, insert_big_task, wait_for

pytestmark = pytest.mark.slow

FAST = "sim:textcraft?capability=1"

#: WCAG AA for normal text. Computed in the page: each element's text colour against the first
#: opaque background behind it.
CONTRAST_JS = """
(selector) => {
  const lum = (rgb) => {
    const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const worst = [];
  for (const el of document.querySelectorAll(selector)) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const fg = lum(parse(getComputedStyle(el).color).slice(0, 3));
    const bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) worst.push([el.className || el.tagName, el.textContent.slice(0, 30), ratio.toFixed(2)]);
  }
  return worst;
}
"""


def run_fast(server: Server, **body: Any) -> dict[str, Any]:
    task = server.submit({"environment": "textcraft", "environment_config": {"seed": 11},
                          "d_max": 4, "executor": {"model": FAST}, **body})
    done: dict[str, Any] = wait_for(
        lambda: (t := server.get(f"/tasks/{task['id']}"))["finished"] and t, 60, "the task")
    return done


@pytest.fixture(scope="module")
def finished(server: Server) -> dict[str, Any]:
    return run_fast(server)


def dfs_ids(node: dict[str, Any]) -> list[int]:
    return [node["id"], *(i for c in node["children"] for i in dfs_ids(c))]


def test_a_5000_node_tree_is_virtualised_and_navigable(page: Any, server: Server) -> None:
    task_id = uuid.uuid4().hex
    insert_big_task(server, task_id, 5000)
    started = time.monotonic()
    page.goto(f"{server.url}/ui/tasks/{task_id}")
    page.wait_for_selector(".tree-row[data-node-id='1']")
    print(f"5,000-node tree: first rows after {time.monotonic() - started:.2f} s (incl. load)")
    in_dom = page.locator(".tree-row").count()
    assert 10 < in_dom < 200, in_dom  # only the rows in sight (and a margin) exist
    assert page.locator(".tree-row[data-node-id='1'].failing").count() == 1
    assert page.locator(".logic-or").count() >= 1 and page.locator(".logic-and").count() >= 1
    # the root's rollup covers the whole tree
    assert "5,000 calls" in page.inner_text(".tree-row[data-node-id='1'] .rollup")

    tree = server.get(f"/tasks/{task_id}/tree")["tree"]
    order = dfs_ids(tree)
    page.focus(".tree")
    page.keyboard.press("End")
    last = page.get_attribute(".tree", "aria-activedescendant")
    assert last == f"node-row-{order[-1]}"
    assert page.locator(f"#node-row-{order[-1]}").is_visible()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")  # collapse the root
    assert page.locator(".tree-row").count() == 1
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")  # to the first child
    assert page.get_attribute(".tree", "aria-activedescendant") == f"node-row-{order[1]}"
    page.mouse.wheel(0, 60_000)
    page.wait_for_timeout(200)
    assert 10 < page.locator(".tree-row").count() < 200
    assert not page.js_errors


def test_the_tasks_list_pages_older_newer_and_newest(browser: Any, page: Any,
                                                    server: Server) -> None:
    for _ in range(55):  # three pages of 25 at least
        insert_big_task(server, uuid.uuid4().hex, 1)
    page.goto(f"{server.url}/ui")
    page.wait_for_selector("table.tasks")
    first = page.locator("tr[data-task-id]").first.get_attribute("data-task-id")
    assert page.locator("#page-newest, #page-newer").count() == 0
    page.click(".pager a:has-text('Older')")
    page.wait_for_selector("#page-newest")
    second_url = page.url
    assert "cursor=" in second_url and page.locator("#page-newer").count() == 0  # newer: newest
    page.click(".pager a:has-text('Older')")
    page.wait_for_url(lambda url: url != second_url)
    page.wait_for_selector("#page-newer")
    third_url = page.url
    page.click("#page-newer")  # back to the page this tab came from
    page.wait_for_url(second_url)
    page.wait_for_selector(f"tr[data-task-id]:not([data-task-id='{first}'])")

    # a deep link to the third page, in a new tab: "Newest" is a link to the first page
    other = browser.new_context().new_page()
    try:
        other.goto(third_url)
        other.wait_for_selector("table.tasks")
        assert other.locator("#page-newer").count() == 0  # nothing seen before it
        assert other.get_attribute("#page-newest", "href") == "/ui"
        other.click("#page-newest")
        other.wait_for_url(f"{server.url}/ui")
        other.wait_for_selector(f"tr[data-task-id='{first}']")
        assert other.locator("#page-newest").count() == 0
    finally:
        other.context.close()
    assert not page.js_errors


def test_keyboard_opens_and_closes_the_node_panel(page: Any, server: Server,
                                                 finished: dict[str, Any]) -> None:
    page.goto(f"{server.url}/ui/tasks/{finished['id']}")
    page.wait_for_selector(".tree-row")
    page.focus(".tree")
    page.keyboard.press("ArrowDown")
    active = page.get_attribute(".tree", "aria-activedescendant")
    node_id = int(active.removeprefix("node-row-"))
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#node-panel[data-node-id='{node_id}']")
    assert page.url.endswith(f"?node={node_id}")
    assert page.locator("#node-panel .step").count() >= 1  # the trajectory
    page.keyboard.press("Escape")
    assert page.locator("#node-panel").is_hidden()
    assert page.evaluate("document.activeElement.classList.contains('tree')")

    # readable contrast everywhere the pages show text: the tree page with the panel open,
    # the panels of a decomposed node and of a leaf with every section expanded, the tasks
    # list, the new-task form (its problem details shown)
    tree = server.get(f"/tasks/{finished['id']}/tree")["tree"]
    leaf = tree
    while leaf["children"]:
        leaf = leaf["children"][-1]
    for node in (1, leaf["id"]):
        page.goto(f"{server.url}/ui/tasks/{finished['id']}?node={node}")
        page.wait_for_selector(f"#node-panel[data-node-id='{node}'] .call")
        assert page.evaluate(CONTRAST_JS, "header *, main *") == [], node
        opened = page.evaluate("""() => {
          const all = document.querySelectorAll('#node-panel details');
          all.forEach((d) => { d.open = true; });
          return all.length; }""")
        assert opened >= 1 and page.locator("#node-panel pre.prompt").first.is_visible()
        assert page.evaluate(CONTRAST_JS, "#node-panel *") == [], node
    assert page.locator("#node-panel .step").count() >= 1  # the leaf's trajectory was checked
    page.goto(f"{server.url}/ui")
    page.wait_for_selector("table.tasks")
    assert page.evaluate(CONTRAST_JS, "header *, main *") == []
    page.goto(f"{server.url}/ui/new")
    page.wait_for_selector("#env-seed")
    assert page.evaluate(CONTRAST_JS, "header *, main *") == []
    page.fill("#d_max", "9")
    page.click("#submit-task")
    page.wait_for_selector(".form-problem .problem")
    assert page.evaluate(CONTRAST_JS, "header *, main *") == []


def test_a_narrow_window(browser: Any, server: Server, finished: dict[str, Any]) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    try:
        for path in ("/ui", f"/ui/tasks/{finished['id']}", "/ui/new"):
            page.goto(server.url + path)
            page.wait_for_selector("main[data-loaded]")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 360, f"{path} scrolls sideways ({width}px)"
        page.goto(f"{server.url}/ui/tasks/{finished['id']}")
        page.click(".tree-row[data-node-id='1'] .goal")
        page.wait_for_selector("#node-panel[data-node-id='1']")
        box = page.locator("#node-panel").bounding_box()
        assert box["x"] == 0 and box["width"] == 360  # the panel covers the tree
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        page.click("#node-panel .close")
        assert page.locator(".tree").is_visible()
    finally:
        context.close()


def test_new_task_form_shows_problems_inline_then_submits(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/ui/new")
    page.wait_for_selector("#env-seed")  # generated from the environment's JSON schema
    # the executor kinds and profiles are the server's, a plug-in's executor among them
    info = server.get("/environments")
    kinds = page.eval_on_selector_all("#executor-kind option", "os => os.map(o => o.value)")
    assert kinds == info["executors"] and PLUGIN_EXECUTOR in kinds
    assert page.input_value("#executor-kind") == "react"
    profiles = page.eval_on_selector_all("#profile option", "os => os.map(o => o.value)")
    assert profiles == info["profiles"] == ["default", "paper"]
    page.select_option("#executor-kind", PLUGIN_EXECUTOR)
    page.fill("#d_max", "9")
    page.click("#submit-task")
    problem = page.wait_for_selector(".form-problem .problem")
    assert "422" in problem.inner_text() and "d_max" in problem.inner_text()
    assert page.get_attribute("#d_max", "aria-invalid") == "true"
    page.fill("#d_max", "2")
    page.fill("#env-seed", "5")
    page.fill("#executor-model", FAST)
    page.click("#submit-task")
    page.wait_for_url("**/ui/tasks/*")
    task_id = page.url.rsplit("/", 1)[1]
    task = server.get(f"/tasks/{task_id}")
    assert task["d_max"] == 2 and task["environment_config"] == {"seed": 5}
    assert task["run_config"]["executor"]["kind"] == PLUGIN_EXECUTOR
    page.wait_for_selector(".tree-row")


def test_markup_in_goals_is_shown_as_text(page: Any, server: Server) -> None:
    evil = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
    task = run_fast(server, goal=evil)
    page.goto(f"{server.url}/ui")
    page.wait_for_selector(f"tr[data-task-id='{task['id']}']")
    page.goto(f"{server.url}/ui/tasks/{task['id']}?node=1")
    page.wait_for_selector("#node-panel[data-node-id='1']")
    assert evil in page.inner_text(".task-goal")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img, main b").count() == 0


def test_copy_as_curl_gives_a_command_that_works(page: Any, server: Server,
                                                 finished: dict[str, Any]) -> None:
    page.goto(f"{server.url}/ui/tasks/{finished['id']}")
    page.wait_for_selector(".tree-row")
    page.click(".title-line button.curl")
    command = page.input_value(".curl-text")
    assert command.startswith("curl ") and f"/tasks/{finished['id']}/tree" in command
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "ADAPT_API_KEY": "unused"}, check=True)
    assert json.loads(out.stdout)["task_id"] == finished["id"]


def test_timeline_and_compare(page: Any, server: Server, finished: dict[str, Any]) -> None:
    react = run_fast(server, strategy="react")
    page.goto(f"{server.url}/ui/tasks/{finished['id']}?view=timeline")
    page.wait_for_selector(".tl-row")
    assert page.locator(".tl-row").count() == finished["nodes_count"]
    assert page.locator(".tl-call").count() == finished["usage"]["llm_calls"]

    page.goto(f"{server.url}/ui/compare?a={finished['id']}&b={react['id']}")
    page.wait_for_selector("table.levels")
    depths = page.locator("table.levels tbody tr").count()
    assert depths == max(finished["max_depth"], react["max_depth"], 1)
    first = page.locator("table.levels tbody tr").first.inner_text()
    assert "depth 1" in first and first.count("1 node ·") == 2
    assert not page.js_errors


def test_the_node_panel_shows_the_claim_the_verdict_and_its_evidence(
        page: Any, server: Server, finished: dict[str, Any]) -> None:
    def nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [node, *(n for c in node["children"] for n in nodes(c))]

    tree = server.get(f"/tasks/{finished['id']}/tree")
    judged = [n for n in nodes(tree["tree"]) if n.get("evidence")]
    assert judged, "the seed-11 task has nodes the environment judged (verification is on)"
    node = judged[0]
    detail = server.get(f"/tasks/{finished['id']}/nodes/{node['id']}")
    page.goto(f"{server.url}/ui/tasks/{finished['id']}?node={node['id']}")
    panel = page.locator(f"#node-panel[data-node-id='{node['id']}']")
    panel.wait_for()
    facts = dict(zip(panel.locator("dl.facts dt").all_inner_texts(),
                     panel.locator("dl.facts dd").all_inner_texts(), strict=True))
    assert facts["evidence"] == detail["evidence"]
    assert facts["verified"] == detail["verdict"]
    assert not page.js_errors
