"""The conformance kit passes a well-behaved environment and names the check a broken one fails."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapt.envs import StepResult
from adapt.envs.testing import (
    CHECKS,
    NONSENSE_ACTIONS,
    ConformanceError,
    ConformanceReport,
    check_environment,
    default_configs,
)

EXECUTOR = (
    "Reach the number.\n> up\nYou count 1.\n> think: Task completed!\nOK.\n\n$task\n$context\n"
)
PLANNER = "Step 1: count up\nExecution Order: (Step 1)\n\n$task\n$context\n"


class CounterConfig(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"seed": 1}, {"seed": 2, "start": 5}]}
    )

    seed: int = Field(default=0, ge=0)
    start: int = 0


class Counter:
    """A well-behaved environment: count ``up`` or ``down`` to a target picked by the seed."""

    name: ClassVar[str] = "counter"
    description: ClassVar[str] = "Count to a number."
    config_model: ClassVar[type[BaseModel]] = CounterConfig
    default_max_steps: ClassVar[int] = 10
    action_grammar: ClassVar[str] = 'start: "up" | "down"'
    prompts: ClassVar[dict[str, str]] = {"executor": EXECUTOR, "planner": PLANNER}
    closed = 0

    def __init__(self) -> None:
        self.value = 0
        self.target = 0

    @property
    def goal(self) -> str:
        return f"count to {self.target}"

    def reset(self, **config: Any) -> str:
        settings = CounterConfig.model_validate(config)
        self.value = settings.start
        self.target = random.Random(settings.seed).randint(settings.start + 1, settings.start + 4)
        return f"You are at {self.value}. Goal: {self.goal}."

    def step(self, action: str) -> StepResult:
        if action.strip() == "up":
            self.value += 1
        elif action.strip() == "down":
            self.value -= 1
        else:
            return StepResult("Nothing happens.")
        done = self.value == self.target
        return StepResult(f"You count {self.value}.", reward=float(done), done=done)

    def salient_state(self) -> str | None:
        return f"You are at {self.value}."

    def task_observation(self, goal: str) -> str:
        return f"Goal: {goal}."

    def is_failure(self, observation: str) -> bool:
        return observation == "Nothing happens."

    def prompt_template(self, kind: str) -> str:
        return self.prompts[kind]

    def close(self) -> None:
        type(self).closed += 1


def test_a_well_behaved_environment_passes_every_check() -> None:
    report = check_environment(Counter, actions=["up", "up", "down", "up", "up", "up", "up"])
    assert isinstance(report, ConformanceReport)
    assert report.passed == list(CHECKS)
    assert report.configs == [{"seed": 1}, {"seed": 2, "start": 5}]
    assert report.environment == "Counter ('counter')"
    assert "13 checks passed" in str(report)
    assert report.tools == []  # it declares none: the tools check passes


def test_explicit_configs_are_used() -> None:
    report = check_environment(Counter, configs=[{"seed": 9}])
    assert report.configs == [{"seed": 9}]


def test_default_configs_without_examples() -> None:
    class Plain(BaseModel):
        seed: int = 0

    assert default_configs(Plain) == [{}]
    assert default_configs(CounterConfig) == [{"seed": 1}, {"seed": 2, "start": 5}]


def test_default_configs_from_field_examples_keep_those_that_validate() -> None:
    class OneOf(BaseModel):
        seed: int | None = Field(default=None, examples=[3, 4])
        goal: str | None = Field(default=None, examples=["craft beehive"])
        extra: list[str] | None = Field(default=None, examples=[["needs a goal"]])

        @model_validator(mode="after")
        def _one(self) -> OneOf:
            if (self.seed is None) == (self.goal is None):
                raise ValueError("give seed or goal")
            return self

    assert default_configs(OneOf) == [{"seed": 3}, {"goal": "craft beehive"}]

    class Required(BaseModel):
        seed: int

    assert default_configs(Required) == [{}]
    with pytest.raises(AssertionError, match=r"'config_model' failed .*\(seed: Field required\)"):
        check_environment(type("NeedsSeed", (Counter,), {"config_model": Required}))


def test_every_instance_is_closed() -> None:
    before = Counter.closed
    made: list[Counter] = []

    def factory() -> Counter:
        made.append(Counter())
        return made[-1]

    check_environment(factory)
    assert len(made) >= 3
    # each instance closed at least once by cleanup; the "close" check closes two of them twice
    assert Counter.closed - before >= len(made) + 2


# -- broken environments: each must fail, naming the check -----------------------------------
class NoName(Counter):
    name: ClassVar[str] = ""


class ZeroMaxSteps(Counter):
    default_max_steps: ClassVar[int] = 0


class BoolMaxSteps(Counter):
    default_max_steps: ClassVar[int] = True


class DictConfigModel(Counter):
    config_model: ClassVar[Any] = dict


class EmptyGrammar(Counter):
    action_grammar: ClassVar[str] = "  "


class NoSchemaConfig(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    hook: Callable[[], None] | None = None


class SchemaFails(Counter):
    config_model: ClassVar[type[BaseModel]] = NoSchemaConfig


class BadExamplesConfig(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"seed": "many"}]})
    seed: int = 0


class BadExamples(Counter):
    config_model: ClassVar[type[BaseModel]] = BadExamplesConfig


class ResetReturnsNone(Counter):
    def reset(self, **config: Any) -> Any:
        super().reset(**config)
        return None


class ResetEmpty(Counter):
    def reset(self, **config: Any) -> str:
        super().reset(**config)
        return "   "


class ResetWithoutGoal(Counter):
    def reset(self, **config: Any) -> str:
        super().reset(**config)
        return f"You are at {self.value}."


class RandomReset(Counter):
    """Ignores the seed: two fresh instances disagree."""

    def reset(self, **config: Any) -> str:
        super().reset(**config)
        self.target = random.randint(10**6, 10**9)
        return f"Goal: {self.goal}."


_gusts = itertools.count()


class StatefulReset(Counter):
    """Deterministic across fresh instances, but counts its own resets."""

    def __init__(self) -> None:
        super().__init__()
        self.resets = 0

    def reset(self, **config: Any) -> str:
        self.resets += 1
        return f"{super().reset(**config)} (episode {self.resets})"


class DefaultsDiffer(Counter):
    """Treats a missing start differently from the model's default."""

    def reset(self, **config: Any) -> str:
        observation = super().reset(**config)
        return observation if "start" in config else f"{observation} (no start given)"


class RaisesOnNonsense(Counter):
    def step(self, action: str) -> StepResult:
        if action.strip() not in ("up", "down"):
            raise ValueError(f"unknown action {action!r}")
        return super().step(action)


class RaisesOnLongAction(Counter):
    def step(self, action: str) -> StepResult:
        if len(action) > 1000:
            raise RuntimeError("too long")
        return super().step(action)


class StepReturnsTuple(Counter):
    def step(self, action: str) -> Any:
        result = super().step(action)
        return (result.observation, result.reward, result.done, result.info)


class StepObservationNotStr(Counter):
    def step(self, action: str) -> StepResult:
        return StepResult(["a", "list"])  # type: ignore[arg-type]


class RewardNotFloatable(Counter):
    def step(self, action: str) -> StepResult:
        return StepResult("ok", reward="lots")  # type: ignore[arg-type]


class DoneNotBool(Counter):
    def step(self, action: str) -> StepResult:
        return StepResult("ok", done=0)  # type: ignore[arg-type]


class InfoNotDict(Counter):
    def step(self, action: str) -> StepResult:
        return StepResult("ok", info=[])  # type: ignore[arg-type]


class RandomStep(Counter):
    def step(self, action: str) -> StepResult:
        return StepResult(f"A gust of wind ({next(_gusts)}).")


class SalientStateDict(Counter):
    def salient_state(self) -> Any:
        return {"value": self.value}


class TaskObservationNone(Counter):
    def task_observation(self, goal: str) -> Any:
        return None


class TaskObservationOnlyForTheGoal(Counter):
    def task_observation(self, goal: str) -> str:
        if goal != self.goal:
            raise KeyError(goal)
        return super().task_observation(goal)


class IsFailureNotBool(Counter):
    def is_failure(self, observation: str) -> Any:
        return "yes" if observation == "Nothing happens." else ""


class NoPlanner(Counter):
    prompts: ClassVar[dict[str, str]] = {"executor": EXECUTOR}


class PromptUnknownIdentifier(Counter):
    prompts: ClassVar[dict[str, str]] = {"executor": EXECUTOR, "planner": "$goal\n$task\n"}


class PromptInvalidTemplate(Counter):
    prompts: ClassVar[dict[str, str]] = {"executor": "It costs $5.\n$task\n", "planner": PLANNER}


class PromptWithoutTask(Counter):
    prompts: ClassVar[dict[str, str]] = {"executor": EXECUTOR, "planner": "Plan.\n$context\n"}


class PromptNotStr(Counter):
    def prompt_template(self, kind: str) -> Any:
        return b"$task" if kind == "planner" else super().prompt_template(kind)


class PromptNeverKeyError(Counter):
    def prompt_template(self, kind: str) -> str:
        return self.prompts.get(kind, EXECUTOR)


class ToolOfAnotherName(Counter):
    """Declares a tool with a name chat APIs refuse."""

    def tools(self) -> list[Any]:
        from adapt.envs.tools import ToolSpec

        return [ToolSpec("count up", "Count one up.")]

    def tool_action(self, name: str, arguments: Any) -> str:
        return "up"


class CloseOnce(Counter):
    def __init__(self) -> None:
        super().__init__()
        self.is_closed = False

    def close(self) -> None:
        if self.is_closed:
            raise RuntimeError("already closed")
        self.is_closed = True


BROKEN: list[tuple[Callable[[], Any], str, str]] = [
    (NoName, "attributes", "name must be a non-empty str"),
    (ZeroMaxSteps, "attributes", "default_max_steps must be an int > 0"),
    (BoolMaxSteps, "attributes", "default_max_steps must be an int > 0"),
    (DictConfigModel, "attributes", "config_model must be a pydantic BaseModel subclass"),
    (EmptyGrammar, "attributes", "action_grammar must be a non-empty str"),
    (SchemaFails, "config_model", "model_json_schema"),
    (BadExamples, "config_model", "does not validate against BadExamplesConfig"),
    (ResetReturnsNone, "reset", "returned None, not a str"),
    (ResetEmpty, "reset", "empty observation"),
    (ResetWithoutGoal, "reset", "must contain the goal"),
    (RandomReset, "deterministic_reset", "two fresh instances"),
    (StatefulReset, "deterministic_reset", "the same instance reset twice"),
    (DefaultsDiffer, "deterministic_reset", "the validated config {'seed': 1, 'start': 0}"),
    (RaisesOnNonsense, "nonsense_actions", "raised ValueError in step(''): unknown action"),
    (RaisesOnLongAction, "nonsense_actions", "raised RuntimeError in step('xxxx"),
    (StepReturnsTuple, "step_types", "not a StepResult"),
    (StepObservationNotStr, "step_types", "observation ['a', 'list'], not a str"),
    (RewardNotFloatable, "step_types", "reward 'lots', which float() refuses"),
    (DoneNotBool, "step_types", "done=0, not a bool"),
    (InfoNotDict, "step_types", "info=[], not a dict"),
    (RandomStep, "deterministic_steps", "A gust of wind"),
    (SalientStateDict, "salient_state", "not str|None"),
    (TaskObservationNone, "task_observation", "not a non-empty str"),
    (TaskObservationOnlyForTheGoal, "task_observation", "raised KeyError"),
    (IsFailureNotBool, "is_failure", "not a bool"),
    (NoPlanner, "prompt_templates", "prompt_template('planner') is missing"),
    (PromptUnknownIdentifier, "prompt_templates", "uses $goal"),
    (PromptInvalidTemplate, "prompt_templates", "not a valid string.Template"),
    (PromptWithoutTask, "prompt_templates", "never uses $task"),
    (PromptNotStr, "prompt_templates", "returned b'$task'"),
    (PromptNeverKeyError, "prompt_templates", "must raise KeyError"),
    (ToolOfAnotherName, "tools", "tool name 'count up' must match"),
    (CloseOnce, "close", "second close()"),
]


@pytest.mark.parametrize(
    ("factory", "check", "detail"), BROKEN, ids=[getattr(b[0], "__name__", "") for b in BROKEN]
)
def test_a_broken_environment_fails_the_named_check(
    factory: Callable[[], Any], check: str, detail: str
) -> None:
    with pytest.raises(AssertionError, match=rf"^conformance check '{check}' failed") as caught:
        check_environment(factory)
    error = caught.value
    assert isinstance(error, ConformanceError)
    assert error.check == check
    assert detail in str(error), str(error)


def test_every_check_can_fail() -> None:
    assert {check for _, check, _ in BROKEN} == set(CHECKS)


def test_a_failing_factory_fails_attributes() -> None:
    def factory() -> Counter:
        raise OSError("no database")

    with pytest.raises(AssertionError, match=r"'attributes' failed .* raised OSError in factory"):
        check_environment(factory)


def test_extra_actions_are_checked_for_types() -> None:
    class Boom(Counter):
        def step(self, action: str) -> StepResult:
            if action == "boom":
                raise RuntimeError("exploded")
            return super().step(action)

    check_environment(Boom)
    with pytest.raises(AssertionError, match=r"'step_types' failed .* step\('boom'\)"):
        check_environment(Boom, actions=["up", "boom"])


def test_no_configs_is_a_failure() -> None:
    with pytest.raises(AssertionError, match=r"'config_model' failed .* no configs"):
        check_environment(Counter, configs=[])


def test_an_exception_from_the_environment_is_chained() -> None:
    with pytest.raises(ConformanceError) as caught:
        check_environment(RaisesOnNonsense)
    assert isinstance(caught.value.__cause__, ValueError)


def test_the_nonsense_actions_cover_the_issue() -> None:
    assert "" in NONSENSE_ACTIONS and "xyzzy plugh" in NONSENSE_ACTIONS
    assert any(len(action) >= 1000 for action in NONSENSE_ACTIONS)
    assert any(not action.isascii() for action in NONSENSE_ACTIONS)
