"""OpenTelemetry traces of tasks (the optional ``otel`` extra), in the GenAI semantic conventions.

- :mod:`adapt.telemetry.spans`: the span model. Turns a task's engine events (live, or read back
  from the database) into span records with deterministic ids; imports no OpenTelemetry.
- :mod:`adapt.telemetry.sink`: ``OtelSink``, the ``TreeSink`` a worker adds when export is on.
- :mod:`adapt.telemetry.otlp`: the OTLP pipeline (the SDK, a bounded batch processor, the
  exporter); the only module that imports OpenTelemetry's SDK, and only once export is
  configured.
- :mod:`adapt.telemetry.history`: ``adapt export otlp``: finished tasks' traces from the database.

Export is on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is
set in the process environment: operator configuration, never a task field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: the environment variables that turn export on (the standard OTLP ones)
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the operator configured an OTLP endpoint (and did not disable the SDK)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


__all__ = ["ENDPOINT_VARIABLES", "configured"]
