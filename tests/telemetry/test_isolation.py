"""Without an OTLP endpoint nothing changes and no OpenTelemetry SDK, exporter or adapt span code
is imported (fastapi itself imports the OpenTelemetry *API*: that one is not ours to avoid);
with one, a worker exports, and an endpoint that does not answer does not hold the task up.
Each case runs a whole task through the service in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapt.telemetry import configured
from tests.e2e.test_embedded_serve import free_port

OURS = ("opentelemetry.sdk", "opentelemetry.exporter", "openinference", "adapt.telemetry.otlp",
        "adapt.telemetry.sink", "adapt.telemetry.spans", "adapt.telemetry.history")

SCRIPT = """
import asyncio, json, sys, time, uuid
import api.main, workers.embedded  # the service's entry points, as `adapt serve` loads them
from adapt.engine import RunConfig
from adapt.service.execute import ServiceContext, execute_task
from adapt.settings import Settings
from adapt.store.migrate import upgrade
from adapt.store.models import Task

settings = Settings()
upgrade(settings.database_url)

async def main():
    ctx = ServiceContext.create(settings)
    task_id = uuid.uuid4().hex
    rc = RunConfig(d_max=4)
    async with ctx.sessions.begin() as s:
        s.add(Task(id=task_id, tenant="default", status="queued", environment="textcraft",
                   environment_config={"seed": 11}, strategy="adapt", d_max=4,
                   run_config=rc.model_dump(mode="json"), executor_model=MODEL,
                   planner_model=MODEL, executor_simulated=True, planner_simulated=True))
    started = time.monotonic()
    status = await execute_task(ctx, task_id)
    took = time.monotonic() - started
    exporting = ctx.telemetry is not None
    await ctx.aclose()
    loaded = sorted({m for m in sys.modules if m.startswith(OURS)})
    print(json.dumps({"status": status, "took": took, "exporting": exporting,
                      "loaded": loaded}))

asyncio.run(main())
"""


def run_task_in_a_fresh_process(tmp_path: Path, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADAPT_"))}
    code = f"MODEL = {'sim:textcraft?capability=1'!r}\nOURS = {OURS!r}\n{SCRIPT}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path,
                         env={**clean, "ADAPT_DATA_DIR": str(tmp_path), **env})
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_without_an_endpoint_nothing_opentelemetry_is_loaded(tmp_path: Path) -> None:
    result = run_task_in_a_fresh_process(tmp_path)
    assert result["status"] == "succeeded" and result["exporting"] is False
    assert result["loaded"] == [], f"loaded without an endpoint: {result['loaded']}"


def test_with_an_endpoint_that_does_not_answer_the_task_runs_as_fast(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = run_task_in_a_fresh_process(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=dead,
                                         OTEL_EXPORTER_OTLP_TIMEOUT="2")
    assert result["status"] == "succeeded" and result["exporting"] is True
    assert "adapt.telemetry.otlp" in result["loaded"] and "adapt.telemetry.sink" in result["loaded"]
    assert float(result["took"]) < 10  # type: ignore[arg-type]


@pytest.mark.parametrize(("env", "on"), [
    ({}, False), ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
])
def test_export_is_on_only_where_the_operator_configured_an_endpoint(
    env: dict[str, str], on: bool
) -> None:
    assert configured(env) is on


def test_no_task_field_can_name_where_spans_go() -> None:
    """The endpoint is operator configuration: the task submission schema has no such field."""
    from api.schemas import TaskCreate

    text = json.dumps(TaskCreate.model_json_schema()).lower()
    assert "otel" not in text and "otlp" not in text and "trace" not in text
