"""``adapt export otlp`` without the ``otel`` extra says so; any other import failure is not
mistaken for it (each case in a fresh interpreter, with one module made unimportable)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

RUN = ("import sys; sys.modules[{module!r}] = None\n"
       "from adapt.cli import app\n"
       "app(['export', 'otlp', '0123'], prog_name='adapt')\n")


def run_without(module: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADAPT_"))},
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    return subprocess.run([sys.executable, "-c", RUN.format(module=module)],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("module", ["opentelemetry.sdk.resources",
                                    "opentelemetry.exporter.otlp.proto.http.trace_exporter"])
def test_a_missing_opentelemetry_package_means_the_extra_is_missing(module: str) -> None:
    out = run_without(module)
    assert out.returncode != 0 and "needs the 'otel' extra" in out.stderr, out.stderr


def test_another_missing_module_is_not_reported_as_the_missing_extra() -> None:
    out = run_without("adapt.telemetry.semconv")
    assert out.returncode != 0
    assert "needs the 'otel' extra" not in out.stderr
    assert "ModuleNotFoundError" in out.stderr and "adapt.telemetry.semconv" in out.stderr
