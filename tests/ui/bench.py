"""Benchmark: first paint of a 5,000-node tree in the viewer (goal: under 1 s).

    .venv/bin/python -m tests.ui.bench [--nodes 5000]

Starts ``adapt serve`` on a temp SQLite database, writes a 5,000-node task through the store,
opens its page in the system Chromium and prints, from the browser's own clock: the time to the
first painted rows after navigation, split into the ``GET /tasks/{id}/tree`` request and the rest
(scripts, rendering); then how long a keyboard jump to the last node and a scroll take."""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path

from tests.ui.harness import Server, chromium_path, insert_big_task

GOAL_MS = 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise SystemExit("no Chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        server.start()
        try:
            task_id = uuid.uuid4().hex
            insert_big_task(server, task_id, args.nodes)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 860})
                for run in range(args.runs):
                    page.goto(f"{server.url}/ui/tasks/{task_id}")
                    page.wait_for_selector(".tree-row")
                    m = page.evaluate("""() => {
                      const paint = performance.getEntriesByName('adapt:tree-painted')[0].startTime;
                      const tree = performance.getEntriesByType('resource')
                        .filter((r) => r.name.endsWith('/tree'))[0];
                      return {paint, tree: tree.responseEnd - tree.startTime};
                    }""")
                    jump = page.evaluate("""() => {
                      const t = document.querySelector('.tree'); t.focus();
                      const t0 = performance.now();
                      t.dispatchEvent(new KeyboardEvent('keydown', {key: 'End', bubbles: true}));
                      t.scrollTop = t.scrollHeight / 2; t.dispatchEvent(new Event('scroll'));
                      return performance.now() - t0;
                    }""")
                    print(f"run {run + 1}: {args.nodes} nodes: first paint {m['paint']:.0f} ms "
                          f"after navigation (GET /tree {m['tree']:.0f} ms, the rest "
                          f"{m['paint'] - m['tree']:.0f} ms); End + scroll {jump:.1f} ms; "
                          f"goal < {GOAL_MS:.0f} ms: {'met' if m['paint'] < GOAL_MS else 'NOT met'}")
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
