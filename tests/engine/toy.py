"""A tiny deterministic environment for engine tests.

Actions: ``ok <x>`` -> ``Did <x>.`` (counted); ``win`` -> reward 1, done; anything else ->
``Nothing happens.`` (a failure observation). Salient state: ``Done: a, b``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from adapt.envs.base import BaseEnvironment, StepResult


class ToyConfig(BaseModel):
    goal: str = "do the thing"


class ToyEnv(BaseEnvironment):
    name: ClassVar[str] = "toy"
    description: ClassVar[str] = "toy environment for tests"
    config_model: ClassVar[type[BaseModel]] = ToyConfig
    default_max_steps: ClassVar[int] = 20
    action_grammar: ClassVar[str] = "ok <x> | win"

    def __init__(self) -> None:
        self._goal = ""
        self.done_items: list[str] = []
        self.actions: list[str] = []

    @property
    def goal(self) -> str:
        return self._goal

    def reset(self, **config: Any) -> str:
        cfg = ToyConfig(**config)
        self._goal = cfg.goal
        self.done_items = []
        self.actions = []
        return self.task_observation(cfg.goal)

    def task_observation(self, goal: str) -> str:
        return f"Goal: {goal}."

    def step(self, action: str) -> StepResult:
        self.actions.append(action)
        if action == "win":
            return StepResult("You win.", 1.0, True)
        if action.startswith("ok "):
            self.done_items.append(action[3:])
            return StepResult(f"Did {action[3:]}.")
        return StepResult("Nothing happens.")

    def salient_state(self) -> str | None:
        return "Done: " + (", ".join(self.done_items) or "nothing")

    def is_failure(self, observation: str) -> bool:
        return observation == "Nothing happens."

    def prompt_template(self, kind: str) -> str:
        if kind == "executor":
            return "EXECUTOR\n$task\n$context\n"
        if kind == "planner":
            return "PLANNER\n$task\n$context\n"
        raise KeyError(kind)
