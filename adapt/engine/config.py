"""Run configuration: plain data the engine takes (the service and CLI build it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapt.engine.budget import Budget


class ExecutorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["react", "stateact", "stateflow"] = Field(
        default="react", description="Executor design: react, stateact or stateflow.")
    max_steps: int | None = Field(
        default=None, ge=1, le=500,
        description="LLM calls per executor run; default from the environment (TextCraft: 20).",
    )
    patience: int = Field(
        default=8, ge=1, le=500,
        description="Consecutive failed or 'OK.' observations after which the run fails.",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=128, ge=1, le=8192, description="Per executor step.")


class PlannerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=16384)
    propagate_context: bool = Field(
        default=True, description="Hand the propagated salient state to the planner too."
    )


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    strategy: str = Field(default="adapt", examples=["adapt", "react"])
    d_max: int = Field(default=3, ge=1, le=8, description="Maximum decomposition depth.")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    budget: Budget = Field(default_factory=Budget)
    seed: int | None = Field(default=None, description="Passed to the models with every call.")
