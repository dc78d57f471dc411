"""``GET /healthz`` and ``GET /readyz``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str] = Field(examples=[{"database": "ok", "dispatcher": "ok"}])
