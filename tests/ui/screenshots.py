"""Regenerate the viewer's screenshots in docs/img/ with the browser the tests use.

    .venv/bin/python -m tests.ui.screenshots

Runs ``adapt serve`` on a temp database, runs a few simulated TextCraft tasks (one whose
decomposition fails, so the failing path shows), and photographs the tasks list, the task page
(its legend open), the node panel (a node at d_max: why it was not decomposed), the timeline and
the task page in a narrow window."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tests.ui.harness import Server, chromium_path, wait_for

OUT = Path(__file__).resolve().parents[2] / "docs" / "img"
MODEL = "sim:textcraft?capability=1"
#: a flaky executor (40 % of its actions fail; fixed seed): TextCraft game 11 at d_max 3 fails
#: down 1 -> 2 -> 9 (a redstone torch, at d_max), beside sub-tasks that succeeded and the ones
#: skipped
FLAKY = "sim:textcraft?capability=1&error_rate=0.4&seed=4"


def run(server: Server, seed: int, model: str = MODEL, **extra: Any) -> dict[str, Any]:
    task = server.submit({"environment": "textcraft", "environment_config": {"seed": seed},
                          "d_max": 3, "executor": {"model": model}, **extra})
    done: dict[str, Any] = wait_for(
        lambda: (t := server.get(f"/tasks/{task['id']}"))["finished"] and t, 120, "a task")
    return done


def deepest_failed(node: dict[str, Any]) -> int:
    for child in node["children"]:
        if child["status"] == "failed":
            return deepest_failed(child)
    return int(node["id"])


def main() -> None:
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise SystemExit("no Chromium: apt-get install chromium")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        server.start()
        try:
            run(server, 7, strategy="react")
            run(server, 11)
            failed = run(server, 11, FLAKY)
            if failed["status"] != "failed":
                raise SystemExit(f"the screenshot task was meant to fail: {failed['status']}")
            tree = server.get(f"/tasks/{failed['id']}/tree")["tree"]
            leaf = deepest_failed(tree)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                shots = [
                    ("ui-tasks.png", "/ui", "table.tasks"),
                    ("ui-task.png", f"/ui/tasks/{failed['id']}", ".tree-row"),
                    ("ui-node.png", f"/ui/tasks/{failed['id']}?node={leaf}",
                     "#node-panel[data-node-id] .call"),
                    ("ui-timeline.png", f"/ui/tasks/{failed['id']}?view=timeline", ".tl-row"),
                ]
                for name, url, ready in shots:
                    page.goto(server.url + url)
                    page.wait_for_selector(ready)
                    if name == "ui-task.png":  # the legend open above the tree
                        page.click("#tree-legend summary")
                    page.wait_for_timeout(300)
                    page.screenshot(path=OUT / name)
                    print(f"wrote {OUT / name}")
                narrow = browser.new_page(viewport={"width": 390, "height": 760})
                narrow.goto(f"{server.url}/ui/tasks/{failed['id']}")
                narrow.wait_for_selector(".tree-row")
                narrow.screenshot(path=OUT / "ui-narrow.png")
                print(f"wrote {OUT / 'ui-narrow.png'}")
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
