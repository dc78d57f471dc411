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


class DefaultModel(BaseModel):
    model: str = Field(description="The model a task that names none runs with.",
                       examples=["sim:textcraft?capability=1"])
    simulated: bool
    environments: list[str] | None = Field(
        default=None, description="The environments it can play (a simulator); null: any.")


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
    default_model: DefaultModel | None = Field(
        default=None, description="This server's default model (ADAPT_DEFAULT_MODEL; without "
        "it the simulated TextCraft model when no OpenAI key is configured).")
