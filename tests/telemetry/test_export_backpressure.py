"""``adapt export otlp --since`` sends a long history to a slow backend whole: with a queue far
smaller than the history, it waits for the backend instead of dropping spans. A real receiver
process (OTLP/HTTP, slow on purpose), the real CLI in a subprocess, tasks run by the service
into a SQLite database."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from adapt.service.execute import ServiceContext, execute_task
from adapt.settings import Settings
from tests.service.helpers import insert_task

ROOT = Path(__file__).resolve().parents[2]
TASKS = 3


async def test_a_long_history_reaches_a_slow_backend_whole(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'adapt.db'}"
    from adapt.store.migrate import upgrade

    await asyncio.to_thread(upgrade, url)  # (alembic runs its own event loop)
    ctx = ServiceContext.create(Settings.model_validate({"ADAPT_DATABASE_URL": url}))
    try:
        for seed in range(TASKS):
            task_id = await insert_task(ctx.sessions, config={"seed": 11 + seed})
            assert await execute_task(ctx, task_id) in ("succeeded", "failed")
    finally:
        await ctx.aclose()

    log = tmp_path / "received.jsonl"
    receiver = subprocess.Popen([sys.executable, "-m", "tests.telemetry.otlp_receiver", str(log),
                                 "--delay", "0.05"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout is not None
        port = int(receiver.stdout.readline())
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADAPT_"))},
               "ADAPT_DATABASE_URL": url, "ADAPT_OTEL_MAX_QUEUE_SIZE": "8",
               "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
        out = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "adapt.cli", "export", "otlp", "--since",
                             "2000-01-01"], capture_output=True, text=True, env=env, timeout=300)
    finally:
        receiver.terminate()
        receiver.wait(10)
    assert out.returncode == 0, out.stderr
    assert "could not be sent" not in out.stderr
    sent = int(out.stderr.split("sent ")[1].split(" span")[0])
    assert f"of {TASKS} task(s)" in out.stderr
    assert sent > 8 * TASKS, "the history must be far longer than the queue"
    received = [s for line in log.read_text().splitlines() for s in json.loads(line)["spans"]]
    assert len(received) == len(set(received)) == sent, "every span, each once"
