"""The API server tunes its garbage collector at start-up, as workers do: full collections
walked every object of the process and paused tree reads of big tasks (130 ms in every fourth
``GET /tasks/{id}/tree`` of a 5,000-node task, for collections that found nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, json, sys
from fastapi.testclient import TestClient
from adapt.settings import Settings
from api.main import create_app
before = (gc.get_threshold()[0], gc.get_freeze_count())
# broker mode (the API process alone; the embedded runner tunes its process too)
app = create_app(Settings.model_validate({"ADAPT_DATABASE_URL": sys.argv[1],
                                          "broker_url": "redis://127.0.0.1:1/0"}))
with TestClient(app) as client:
    assert client.get("/healthz").status_code == 200
    after = (gc.get_threshold()[0], gc.get_freeze_count())
print(json.dumps({"before": before, "after": after}))
"""


def test_the_api_server_tunes_its_collector_at_start_up(tmp_path: Path) -> None:
    from adapt.service.gc_tuning import GC_THRESHOLD
    from adapt.store.migrate import upgrade

    url = f"sqlite:///{tmp_path}/a.db"
    upgrade(url)  # broker mode leaves migrations to `adapt db upgrade`
    out = subprocess.run([sys.executable, "-c", SCRIPT, url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"][0] == 700 and seen["before"][1] == 0  # Python's defaults
    assert seen["after"][0] == GC_THRESHOLD
    assert seen["after"][1] > 10_000  # the start-up's objects are out of later collections
