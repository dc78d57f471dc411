"""Regenerate docs/img/phoenix-trace.png: a task's trace in Arize Phoenix, as the Phoenix test
takes it (the same harness, task and browser).

    .venv/bin/python -m tests.telemetry.screenshots

Needs the ``phoenix`` extra and Debian's Chromium; nothing leaves the machine."""

from __future__ import annotations

import tempfile
from pathlib import Path

from adapt.telemetry.spans import trace_id
from tests.telemetry import phoenix as px
from tests.ui.harness import chromium_path

OUT = Path(__file__).resolve().parents[2] / "docs" / "img" / "phoenix-trace.png"


def main() -> None:
    chromium = chromium_path()
    if chromium is None:
        raise SystemExit("no Chromium: apt-get install chromium")
    if not px.installed():
        raise SystemExit("no Phoenix: pip install -e '.[phoenix]'")
    with tempfile.TemporaryDirectory() as tmp:
        phoenix = px.Phoenix(Path(tmp) / "phoenix")
        phoenix.workdir.mkdir()
        phoenix.start()
        try:
            server = px.serve_with_export(Path(tmp) / "serve", phoenix, "adapt")
            try:
                task = px.run_task(server)
            finally:
                server.stop()
            trace = f"{trace_id(task['id']):032x}"
            phoenix.wait_for_trace("adapt", trace, 39)
            OUT.parent.mkdir(parents=True, exist_ok=True)
            px.screenshot(phoenix, "adapt", trace, OUT, chromium)
            print(f"wrote {OUT}")
        finally:
            phoenix.stop()


if __name__ == "__main__":
    main()
