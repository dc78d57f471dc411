"""The library layers must not pull in web, database, queue or tracing packages."""

from __future__ import annotations

import subprocess
import sys

import pytest

# the engine layers do not trace either: spans are made from their events in adapt.telemetry
FORBIDDEN = ("fastapi", "sqlalchemy", "celery", "redis", "opentelemetry", "openinference")


@pytest.mark.parametrize(
    "module",
    ["adapt.engine", "adapt.llm", "adapt.envs", "adapt.sim", "adapt.envs.textcraft",
     "adapt.envs.intercode_sql"],
)
def test_library_layer_imports_no_service_packages(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]\n"
        "print(','.join(sorted(set(m.split('.')[0] for m in bad))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{module} imported {out.stdout.strip()}"
