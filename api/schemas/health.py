"""``GET /healthz``, ``GET /readyz`` and ``GET /version``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str] = Field(examples=[{"database": "ok", "dispatcher": "ok"}])


class VersionInfo(BaseModel):
    version: str = Field(description="The release running (pyproject's version).",
                         examples=["0.1.0"])
    schema_revision: str = Field(
        description="The newest database migration this release ships (`adapt db check` "
        "compares the database with it).", examples=["0015"])
