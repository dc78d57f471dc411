"""The environment contract plug-in authors implement.

Synchronous and small on purpose. The engine runs one instance through a whole decomposition
tree, so state carries across sub-tasks.

Prompt templates are ``string.Template`` texts. The engine substitutes:

- ``$task``: the task observation for the (sub-)goal (``task_observation(goal)``),
- ``$context``: the propagated salient state from earlier successful sub-tasks, or ``""``,

and, for the executor, appends the trajectory so far as ``"> {action}\\n{observation}\\n"`` lines
followed by ``"> "``, where the model writes its next line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class StepResult:
    observation: str
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    name: ClassVar[str]
    description: ClassVar[str]
    config_model: ClassVar[type[BaseModel]]
    default_max_steps: ClassVar[int]
    action_grammar: ClassVar[str]
    #: the state the StateAct executor asks the model to track every step, as ``key: value``
    #: lines (lower-case names, e.g. TextCraft ``("current inventory",)``; a household
    #: environment would use ``("current location", "current inventory")``); ``()``: none
    state_fields: ClassVar[tuple[str, ...]]

    @property
    def goal(self) -> str:
        """The current episode's goal, e.g. ``craft polished granite stairs`` (after reset)."""
        ...

    def reset(self, **config: Any) -> str:
        """Start an episode; return the initial observation (which includes the goal)."""
        ...

    def step(self, action: str) -> StepResult: ...

    def salient_state(self) -> str | None:
        """What the controller propagates to later sub-tasks (TextCraft: the inventory)."""
        ...

    def task_observation(self, goal: str) -> str:
        """The task observation shown to the executor/planner for a (sub-)goal."""
        ...

    def is_failure(self, observation: str) -> bool:
        """Whether an observation counts as a failed action for the executor's patience rule."""
        ...

    def prompt_template(self, kind: str) -> str:
        """A prompt template: ``executor``, ``planner`` and optionally others. KeyError if absent."""
        ...

    def close(self) -> None: ...


# -- optional capabilities: an environment has them by having the member -------------------
@runtime_checkable
class AsyncStepping(Protocol):
    """Actions that can be awaited; a batch of them runs concurrently (the spec executor)."""

    async def astep(self, action: str) -> StepResult: ...


@runtime_checkable
class ConcurrentActions(Protocol):
    """``concurrent_actions = True``: independent actions may run in threads at once."""

    concurrent_actions: ClassVar[bool]


@runtime_checkable
class AnswerChecking(Protocol):
    """A final answer is checked by the action ``f"{answer_action} <answer>"`` (``None``: not)."""

    answer_action: ClassVar[str | None]


def answer_action(env: object) -> str | None:
    """The environment's answer action, or ``None`` when it checks no answers."""
    return env.answer_action if isinstance(env, AnswerChecking) else None


class BaseEnvironment:
    """Convenience base class: prompt templates from package data, no-op close."""

    name: ClassVar[str] = "base"
    description: ClassVar[str] = ""
    config_model: ClassVar[type[BaseModel]] = BaseModel
    default_max_steps: ClassVar[int] = 20
    action_grammar: ClassVar[str] = ""
    #: state fields for the StateAct executor (see ``Environment.state_fields``); none by default
    state_fields: ClassVar[tuple[str, ...]] = ()
    #: package holding ``prompts/<kind>.txt`` files
    prompt_package: ClassVar[str | None] = None
    #: the reward at or above which an episode succeeded, when the environment gives such a
    #: verdict (TextCraft, ALFWorld, InterCode-SQL: 1.0); ``None``: it does not, and trials
    #: (``try_again``, ``reflexion``) count the executor's own verdict
    success_reward: ClassVar[float | None] = None
    #: an action the engine sends when a task ends (turn limit, failure) before the episode is
    #: done, so its last state is scored (InterCode-SQL: ``submit``); ``None``: nothing
    final_action: ClassVar[str | None] = None

    def prompt_template(self, kind: str) -> str:
        if self.prompt_package is None:
            raise KeyError(kind)
        path = resources.files(self.prompt_package).joinpath("prompts", f"{kind}.txt")
        if not path.is_file():
            raise KeyError(kind)
        return path.read_text(encoding="utf-8")

    def is_failure(self, observation: str) -> bool:
        return False

    def salient_state(self) -> str | None:
        return None

    def rolls_back(self) -> bool:
        """Whether a failed sub-task is rolled back (``checkpoint`` / ``rollback``): the
        controller then takes a checkpoint before each executor attempt and rolls back to it when
        the attempt fails, so a failed attempt leaves nothing behind (ADaPT's ALFWorld runs)."""
        return False

    def checkpoint(self) -> object:
        """A mark of the current state for ``rollback`` (only used when ``rolls_back()``)."""
        raise NotImplementedError(f"{self.name} does not roll back sub-tasks")

    def rollback(self, mark: object) -> None:
        """Return to the state of ``checkpoint()``'s ``mark``."""
        raise NotImplementedError(f"{self.name} does not roll back sub-tasks")

    def close(self) -> None:
        return None
