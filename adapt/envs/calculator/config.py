"""The ``environment_config`` model of the calculator environment."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapt.envs.calculator.problems import PROBLEMS


class CalculatorConfig(BaseModel):
    """Which problem to solve: give at most one of ``index``, ``seed`` or ``question`` (with
    ``answer``); with none, problem 0."""

    model_config = ConfigDict(
        extra="forbid", frozen=True,
        json_schema_extra={"examples": [{"index": 0}, {"seed": 7},
                                        {"question": "What is 6 times 7?", "answer": 42}]},
    )

    index: int | None = Field(
        default=None, ge=0, lt=len(PROBLEMS),
        description=f"A built-in problem by number (0-{len(PROBLEMS) - 1}).")
    seed: int | None = Field(
        default=None, ge=0,
        description="Pick a built-in problem with this seed (deterministic: seed modulo the "
        "number of problems).")
    question: str | None = Field(
        default=None, min_length=1, max_length=2000,
        description="Your own word problem (requires answer).")
    answer: float | None = Field(
        default=None, description="The gold answer of `question`.")

    @model_validator(mode="after")
    def _one_source(self) -> CalculatorConfig:
        given = [name for name in ("index", "seed", "question") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"give at most one of index, seed or question; got {', '.join(given)}")
        if (self.question is None) != (self.answer is None):
            raise ValueError("question and answer go together: give both or neither")
        return self
