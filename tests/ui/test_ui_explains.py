"""A viewer that explains itself (issue 32), in a real browser against ``adapt serve``: the
legend and the badges' tooltips, a decomposed root's fields that agree with the task, why a
node was not decomposed, the timeline in the tree's order with waiting apart from running, the
task list's model, d_max and SIMULATED columns with two tasks picked for compare (by any
unique id prefix), and a new-task form with one goal field and a complete model hint."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from tests.ui.harness import Server, wait_for

pytestmark = pytest.mark.slow

SIM = "sim:textcraft?capability=1"


def finished(server: Server, body: dict[str, Any]) -> dict[str, Any]:
    task_id = server.submit(body)["id"]

    def done() -> dict[str, Any] | None:
        task: dict[str, Any] = server.get(f"/tasks/{task_id}")
        return task if task["finished"] else None

    result: dict[str, Any] = wait_for(done, 60, f"task {task_id} to finish")
    return result


@pytest.fixture(scope="module")
def succeeded(server: Server) -> dict[str, Any]:
    """TextCraft game 11 at d_max 4: the root's executor gives up, its plan succeeds."""
    task = finished(server, {"environment": "textcraft", "environment_config": {"seed": 11},
                             "d_max": 4, "executor": {"model": SIM}})
    assert task["status"] == "succeeded" and task["reward"] == 1.0
    return task


@pytest.fixture(scope="module")
def shallow(server: Server) -> dict[str, Any]:
    """The same game at d_max 2: sub-tasks reach the depth limit and their AND fails."""
    task = finished(server, {"environment": "textcraft", "environment_config": {"seed": 11},
                             "d_max": 2, "executor": {"model": SIM}})
    assert task["status"] == "failed"
    return task


def tree_nodes(server: Server, task_id: str) -> list[dict[str, Any]]:
    """The API's nodes in the tree's order (each node, then its children)."""
    out: list[dict[str, Any]] = []
    stack = [server.get(f"/tasks/{task_id}/tree")["tree"]]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node["children"]))
    return out


def open_task(page: Any, server: Server, task_id: str, query: str = "") -> None:
    page.goto(f"{server.url}/ui/tasks/{task_id}{query}")
    page.wait_for_selector("main[data-loaded]")


def test_the_legend_and_the_badges_say_what_they_mean(page: Any, server: Server,
                                                       succeeded: dict[str, Any]) -> None:
    open_task(page, server, succeeded["id"])
    legend = page.locator("#tree-legend")
    assert not legend.locator("dl").is_visible()
    legend.locator("summary").click()
    text = legend.inner_text()
    for words in ("claim ✓ ✗ ?", "verified ✓ ✗ ?", "r 1", "d_max", "failing path", "AND", "OR"):
        assert words in text, words
    root = page.locator(".tree-row[data-node-id='1']")
    assert root.locator(".claim").inner_text() == "claim ✗"
    assert "said it could not" in (root.locator(".claim").get_attribute("title") or "")
    # the decomposed root's reward is its subtree's: the task's
    assert root.locator(".reward").inner_text() == "r 1"
    assert "subtree" in (root.locator(".reward").get_attribute("title") or "")
    assert "LLM calls" in (root.locator(".rollup").get_attribute("title") or "")
    rollups = page.locator(".tree-row .rollup").all_inner_texts()
    assert not any(re.search(r"\b1 calls\b", r) for r in rollups), rollups
    assert all(re.match(r"^[\d,]+ calls? · [\d,]+ tok · \$", r) for r in rollups), rollups
    assert page.js_errors == []


def test_a_decomposed_roots_fields_agree_with_the_task(page: Any, server: Server,
                                                       succeeded: dict[str, Any]) -> None:
    open_task(page, server, succeeded["id"], "?node=1")
    panel = page.locator("#node-panel[data-node-id='1']")
    panel.wait_for()
    facts = dict(zip(panel.locator("dl.facts dt").all_inner_texts(),
                     panel.locator("dl.facts dd").all_inner_texts(), strict=True))
    assert facts["success"] == "yes"
    assert facts["reward reached"] == "1 (the task's reward: 1)"
    assert re.match(r"its AND plan: (\d+) of \1 sub-tasks? succeeded; the environment "
                    r"confirmed its goal$", facts["outcome"]), facts
    # its own executor run gave up: said under its own heading, in words
    assert facts["claim"] == "no" and facts["executor reward"] == "0"
    assert facts["termination"].startswith("failed: the executor said")
    assert panel.locator("h3.facts-title").all_inner_texts() == ["OUTCOME",
                                                                  "THIS NODE'S EXECUTOR RUN"]
    for term in ("success", "reward reached", "claim", "termination"):
        title = panel.locator("dl.facts dt", has_text=re.compile(f"^{term}$")).get_attribute(
            "title")
        assert title and len(title) > 20, term
    assert page.js_errors == []


def test_a_node_that_was_not_decomposed_says_why(page: Any, server: Server,
                                                 shallow: dict[str, Any],
                                                 succeeded: dict[str, Any]) -> None:
    nodes = tree_nodes(server, shallow["id"])
    limited = next(n for n in nodes if n["depth"] == 2 and n["status"] == "failed")
    skipped = [n for n in nodes if n["status"] == "skipped"]
    assert limited["reason"] == "not decomposed: d_max reached (depth 2 of 2)"
    open_task(page, server, shallow["id"])
    row = page.locator(f".tree-row[data-node-id='{limited['id']}']")
    assert row.locator(".reason").inner_text() == "d_max"
    assert row.locator(".reason").get_attribute("title") == limited["reason"]
    if skipped:
        badge = page.locator(f".tree-row[data-node-id='{skipped[0]['id']}'] .reason")
        assert badge.inner_text() == "AND failed"
        assert (badge.get_attribute("title") or "").startswith("skipped: an earlier AND step")
    row.locator(".goal").click()
    panel = page.locator(f"#node-panel[data-node-id='{limited['id']}']")
    panel.wait_for()
    assert panel.locator(".not-decomposed").inner_text() == (
        "Not decomposed: d_max reached (depth 2 of 2).")
    # a node whose executor succeeded needed no plan, and says so
    done = next(n for n in tree_nodes(server, succeeded["id"]) if n["status"] == "succeeded"
                and not n["children"] and n["kind"] == "task")
    open_task(page, server, succeeded["id"])
    page.locator(f".tree-row[data-node-id='{done['id']}'] .goal").click()
    panel = page.locator(f"#node-panel[data-node-id='{done['id']}']")
    panel.wait_for()
    assert panel.locator(".not-decomposed").inner_text() in (
        "Not decomposed: not needed, its executor succeeded.",
        "Not decomposed: not needed, its executor reached the goal (the environment confirmed "
        "it).")
    assert page.js_errors == []


def _span(style: str) -> tuple[float, float]:
    left = float(re.search(r"left:\s*([\d.]+)%", style).group(1))  # type: ignore[union-attr]
    width = float(re.search(r"width:\s*([\d.]+)%", style).group(1))  # type: ignore[union-attr]
    return left, left + width


def test_the_timeline_follows_the_tree_and_tells_waiting_from_running(
        page: Any, server: Server, succeeded: dict[str, Any]) -> None:
    open_task(page, server, succeeded["id"], "?view=timeline")
    page.wait_for_selector(".tl-row")
    shown = [int(x) for x in page.eval_on_selector_all(".tl-row", "rs => rs.map(r => r.dataset.nodeId)")]
    assert shown == [n["id"] for n in tree_nodes(server, succeeded["id"])]
    assert "in the tree's order" in page.locator(".timeline-box > p.muted").first.inner_text()
    # the root's children run one after the other (AND): a later sibling waits, then runs
    # after the earlier one's run ended
    root_kids = server.get(f"/tasks/{succeeded['id']}/tree")["tree"]["children"]
    ran = [k for k in root_kids if k["kind"] == "task" and k["status"] != "skipped"]
    assert len(ran) >= 2
    spans = []
    for kid in ran:
        row = page.locator(f".tl-row[data-node-id='{kid['id']}']")
        spans.append(_span(row.locator(".tl-run").first.get_attribute("style") or ""))
        assert row.locator(".tl-wait").count() == 1, "a sub-task waits before it runs"
    for earlier, later in itertools.pairwise(spans):
        assert later[0] >= earlier[1] - 0.5, spans  # sequential, not parallel
    assert page.locator(".tl-key").inner_text().count("waiting") == 1
    assert page.js_errors == []


def test_the_list_shows_model_depth_limit_and_simulated_and_picks_two_to_compare(
        page: Any, server: Server, succeeded: dict[str, Any], shallow: dict[str, Any]) -> None:
    page.goto(f"{server.url}/ui")
    page.wait_for_selector("main[data-loaded] table.tasks")
    heads = page.locator("table.tasks th").all_inner_texts()
    assert {"d_max", "model"} <= set(heads)
    for task, d_max in ((succeeded, "4"), (shallow, "2")):
        row = page.locator(f"tr[data-task-id='{task['id']}']")
        cells = dict(zip(heads, row.locator("td").all_inner_texts(), strict=True))
        assert cells["d_max"] == d_max
        assert cells["model"].startswith("sim:textcraft") and "SIMULATED" in cells["model"]
    button = page.locator("#compare-selected")
    assert button.is_disabled()
    page.check(f"tr[data-task-id='{succeeded['id']}'] input.pick")
    assert button.is_disabled()
    page.check(f"tr[data-task-id='{shallow['id']}'] input.pick")
    page.wait_for_timeout(2500)  # the list re-polls: the ticks stay
    assert page.is_checked(f"tr[data-task-id='{succeeded['id']}'] input.pick")
    button.click()
    page.wait_for_selector("main[data-loaded] table.compare")
    assert f"a={succeeded['id']}" in page.url and f"b={shallow['id']}" in page.url
    assert page.js_errors == []


def test_compare_accepts_any_unique_prefix(page: Any, server: Server,
                                           succeeded: dict[str, Any],
                                           shallow: dict[str, Any]) -> None:
    a, b = succeeded["id"], shallow["id"]
    page.goto(f"{server.url}/ui/compare?a={a[:8]}&b={b[:6]}")
    page.wait_for_selector("main[data-loaded] table.compare")
    assert page.url.endswith(f"/ui/compare?a={a}&b={b}")  # the full ids, for a lasting link
    assert a[:8] in page.locator("table.compare thead").first.inner_text()
    page.goto(f"{server.url}/ui/compare?a={a[:8]}&b=ffffffffffffffffffff")
    page.wait_for_selector("main[data-loaded]")
    assert 'no task id starts with "ffffffffffffffffffff"' in page.locator(".problem").inner_text()
    page.goto(f"{server.url}/ui/compare?a=xyz&b={b}")
    page.wait_for_selector("main[data-loaded]")
    assert "is not a task id" in page.locator(".problem").inner_text()
    assert page.js_errors == []


def test_the_form_has_one_goal_field_and_names_the_default_model(page: Any,
                                                                 server: Server) -> None:
    page.goto(f"{server.url}/ui/new")
    page.wait_for_selector("main[data-loaded]")
    # TextCraft's own goal (checked against its seed by its config) is the only goal field
    assert page.locator("#env-goal").is_visible() and not page.locator("#goal").is_visible()
    placeholder = page.get_attribute("#executor-model", "placeholder") or ""
    assert placeholder == f"server default: {SIM} (SIMULATED, plays textcraft only)"
    hint = page.locator("#model-hint").inner_text()
    for backend in ("sim:", "script:", "openai:", "openai-completions:", "local:"):
        assert backend in hint, backend
    assert page.locator("#model-note").inner_text() == ""
    page.select_option("#environment", "calculator")
    assert page.locator("#goal").is_visible()  # calculator has no goal of its own
    assert "plays only textcraft" in page.locator("#model-note").inner_text()
    page.select_option("#environment", "textcraft")
    page.fill("#env-seed", "3")
    page.click("#submit-task")
    page.wait_for_url(re.compile(r"/ui/tasks/[0-9a-f]{22}$"))
    assert page.js_errors == []
