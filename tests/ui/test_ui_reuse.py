"""A reused node in the viewer (issue 31), in a real browser against ``adapt serve``: its node
panel says where its solution came from, with a link to the task and node that learned it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.harness import Server
from tests.ui.test_ui_explains import SIM, finished, open_task, tree_nodes

pytestmark = pytest.mark.slow


def test_a_reused_nodes_panel_names_its_origin(page: Any, server: Server) -> None:
    body = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4,
            "executor": {"model": SIM}, "reuse": {"skills": True}}
    first = finished(server, body)
    second = finished(server, body)
    reused = [n for n in tree_nodes(server, second["id"]) if n["reused"]]
    assert reused, "the second task replayed nothing"
    node = reused[0]
    origin = node["reused"]
    assert origin["task"] == first["id"] and node["usage"]["llm_calls"] == 0
    open_task(page, server, second["id"], f"?node={node['id']}")
    panel = page.locator(f"#node-panel[data-node-id='{node['id']}']")
    panel.wait_for()
    facts = dict(zip(panel.locator("dl.facts dt").all_inner_texts(),
                     panel.locator("dl.facts dd").all_inner_texts(), strict=True))
    assert facts["reused from"] == (f"library entry {origin['entry']}, learned at task "
                                    f"{first['id']} · node {origin['node']} (found by a "
                                    "simulated model)"), facts
    assert facts["termination"].startswith("reused: a stored solution")
    assert facts["LLM calls"] == "0"
    link = panel.locator("a.reused-origin")
    assert link.get_attribute("href") == f"/ui/tasks/{first['id']}?node={origin['node']}"
    title = panel.locator("dl.facts dt", has_text="reused from").get_attribute("title")
    assert title and "experience library" in title
    assert page.js_errors == []


def test_a_reused_plans_node_panel_names_its_origin(page: Any, server: Server) -> None:
    body = {"environment": "textcraft", "environment_config": {"seed": 11}, "d_max": 4,
            "executor": {"model": SIM}, "reuse": {"plans": True}}
    first = finished(server, body)
    second = finished(server, body)
    node = next(n for n in tree_nodes(server, second["id"]) if n["children"])
    open_task(page, server, second["id"], f"?node={node['id']}")
    panel = page.locator(f"#node-panel[data-node-id='{node['id']}']")
    panel.wait_for()
    facts = dict(zip(panel.locator("dl.facts dt").all_inner_texts(),
                     panel.locator("dl.facts dd").all_inner_texts(), strict=True))
    assert facts["plan from"].startswith("reused, no planner call: library entry "), facts
    assert f"learned at task {first['id']} · node " in facts["plan from"]
    assert facts["plan from"].endswith("(found by a simulated model)")
    link = panel.locator("a.reused-origin")
    assert link.get_attribute("href").startswith(f"/ui/tasks/{first['id']}?node=")
    title = panel.locator("dl.facts dt", has_text="plan from").get_attribute("title")
    assert title and "experience library" in title
    assert page.js_errors == []
