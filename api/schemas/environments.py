"""``GET /environments``: the registered environments and what a task may choose."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class EnvironmentPublic(BaseModel):
    name: str = Field(examples=["textcraft"])
    description: str
    config_schema: dict[str, Any] = Field(description="JSON schema of environment_config.")
    default_max_steps: int
    action_grammar: str


class EnvironmentList(BaseModel):
    items: list[EnvironmentPublic]
    strategies: list[str] = Field(description="Strategies a task may use.",
                                  examples=[["adapt", "react"]])
    executors: list[str] = Field(
        default_factory=list, description="Executor kinds a task may use (`executor.kind`): "
        "the built-ins, then plug-ins.", examples=[["react", "stateact", "stateflow", "spec"]])
    profiles: list[str] = Field(default_factory=list,
                                description="Profiles a task may use (`profile`).",
                                examples=[["default", "paper"]])
