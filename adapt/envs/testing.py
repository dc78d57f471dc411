"""The conformance kit: run ``check_environment`` in your environment's tests.

    from adapt.envs.testing import check_environment

    def test_conforms() -> None:
        report = check_environment(MyEnv, configs=[{"seed": 0}, {"seed": 1}])
        assert "deterministic_reset" in report.passed

An environment that declares its actions as tools (``adapt.envs.tools``) has them checked too
(the ``tools`` check, ``adapt.envs.tooltesting``).

Every failed check raises ``ConformanceError`` (an ``AssertionError``) whose message starts with
``conformance check '<name>' failed``; an exception raised by the environment inside a check is
turned into such a failure, chained to the original. The checks, in order, are ``CHECKS``.
"""

from __future__ import annotations

import json
import logging
import math
import string
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from adapt.envs.base import Environment, StepResult
from adapt.envs.registry import format_validation_errors
from adapt.envs.tooltesting import check_tools

logger = logging.getLogger(__name__)

#: every check, in the order they run
CHECKS: tuple[str, ...] = (
    "attributes",
    "config_model",
    "reset",
    "deterministic_reset",
    "nonsense_actions",
    "step_types",
    "deterministic_steps",
    "salient_state",
    "task_observation",
    "is_failure",
    "tools",
    "prompt_templates",
    "close",
)

#: actions no environment understands; each must give an observation, not an exception
NONSENSE_ACTIONS: tuple[str, ...] = (
    "",
    "   ",
    "xyzzy plugh",
    "x" * 5000,
    "ключ 鍵 🗝️ ñ",
    "> \n\t$task {} %s \\",
)

#: the identifiers a prompt template may use
TEMPLATE_IDENTIFIERS = frozenset({"task", "context"})

#: the prompt templates every environment must have
REQUIRED_PROMPTS: tuple[str, ...] = ("executor", "planner")

_SUB_GOAL = "a sub-goal made up by the conformance check"


class ConformanceError(AssertionError):
    """A failed conformance check; ``check`` names it."""

    def __init__(self, check: str, environment: str, detail: str) -> None:
        self.check = check
        self.environment = environment
        self.detail = detail
        super().__init__(f"conformance check {check!r} failed for {environment}: {detail}")


@dataclass
class ConformanceReport:
    """What ``check_environment`` checked: every name in ``passed`` held for every config."""

    environment: str
    configs: list[dict[str, Any]]
    passed: list[str] = field(default_factory=list)
    #: the tools the environment declares (``adapt.envs.tools``), checked by ``tools``;
    #: empty: it declares none (the check passes)
    tools: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.environment}: {len(self.passed)} checks passed "
            f"({', '.join(self.passed)}) for {len(self.configs)} config(s)"
        )


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


class _Kit:
    def __init__(self, factory: Callable[[], Any], environment: str) -> None:
        self.factory = factory
        self.environment = environment
        self.instances: list[Any] = []

    def fail(self, check: str, detail: str) -> ConformanceError:
        return ConformanceError(check, self.environment, detail)

    @contextmanager
    def check(self, name: str, doing: str = "") -> Iterator[None]:
        """Turn anything the environment raises into a failure of check ``name``."""
        try:
            yield
        except ConformanceError:
            raise
        except Exception as exc:
            where = f" in {doing}" if doing else ""
            raise self.fail(name, f"raised {type(exc).__name__}{where}: {exc}") from exc

    def new(self, check: str) -> Any:
        with self.check(check, "factory()"):
            env = self.factory()
        self.instances.append(env)
        return env

    def reset(self, check: str, env: Any, config: Mapping[str, Any]) -> str:
        with self.check(check, f"reset(**{_short(dict(config))})"):
            observation = env.reset(**config)
        if not isinstance(observation, str):
            raise self.fail(check, f"reset() returned {_short(observation)}, not a str")
        return observation

    def step(self, check: str, env: Any, action: str) -> Any:
        with self.check(check, f"step({_short(action, 40)})"):
            return env.step(action)

    def close_all(self) -> None:
        for env in self.instances:
            try:
                env.close()
            except Exception as exc:  # reported by the "close" check when it runs
                logger.debug("close() of %s raised during cleanup: %s", self.environment, exc)


def _check_attributes(kit: _Kit, cls: type) -> None:
    def fail(detail: str) -> ConformanceError:
        return kit.fail("attributes", f"{cls.__name__}.{detail}")

    for attribute in ("name", "action_grammar"):
        value = getattr(cls, attribute, None)
        if not isinstance(value, str) or not value.strip():
            raise fail(f"{attribute} must be a non-empty str, got {_short(value)}")
    description = getattr(cls, "description", None)
    if not isinstance(description, str):
        raise fail(f"description must be a str, got {_short(description)}")
    config_model = getattr(cls, "config_model", None)
    if not (isinstance(config_model, type) and issubclass(config_model, BaseModel)):
        raise fail(f"config_model must be a pydantic BaseModel subclass, got {config_model!r}")
    max_steps = getattr(cls, "default_max_steps", None)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps <= 0:
        raise fail(f"default_max_steps must be an int > 0, got {_short(max_steps)}")
    methods = ("reset", "step", "salient_state", "task_observation", "is_failure")
    for method in (*methods, "prompt_template", "close"):
        if not callable(getattr(cls, method, None)):
            raise fail(f"{method} must be a method")
    if not hasattr(cls, "goal"):
        raise fail("goal must be a property (or attribute) holding the episode's goal")


def _validates(config_model: type[BaseModel], config: dict[str, Any]) -> bool:
    try:
        config_model.model_validate(config)
    except Exception:
        return False
    return True


def default_configs(config_model: type[BaseModel]) -> list[dict[str, Any]]:
    """The configs to check with when none are given.

    The model's own JSON-schema ``examples`` (``json_schema_extra={"examples": [...]}``) if it
    has any; otherwise those of ``{}`` and ``{field: first example}`` (for each field with
    ``Field(examples=[...])``) that validate; ``[{}]`` when none does.
    """
    examples = config_model.model_json_schema().get("examples")
    if isinstance(examples, list) and examples and all(isinstance(e, dict) for e in examples):
        return [dict(example) for example in examples]
    candidates: list[dict[str, Any]] = [{}]
    for name, info in config_model.model_fields.items():
        if info.examples:
            candidates.append({info.alias or name: info.examples[0]})
    return [c for c in candidates if _validates(config_model, c)] or [{}]


def _check_config_model(
    kit: _Kit, config_model: type[BaseModel], configs: Sequence[Mapping[str, Any]] | None
) -> list[dict[str, Any]]:
    with kit.check("config_model", "config_model.model_json_schema()"):
        schema = config_model.model_json_schema()
        json.dumps(schema)
        chosen = default_configs(config_model) if configs is None else [dict(c) for c in configs]
    if not chosen:
        raise kit.fail("config_model", "no configs to check with (configs=[])")
    for config in chosen:
        try:
            config_model.model_validate(config)
        except ValidationError as exc:
            raise kit.fail(
                "config_model",
                f"config {_short(config)} does not validate against {config_model.__name__} "
                f"({format_validation_errors(exc)}); pass configs=[...] that do",
            ) from exc
        except Exception as exc:
            raise kit.fail(
                "config_model",
                f"{config_model.__name__}.model_validate({_short(config)}) raised "
                f"{type(exc).__name__}: {exc}",
            ) from exc
    return chosen


def _check_reset(kit: _Kit, env: Any, config: Mapping[str, Any]) -> str:
    observation = kit.reset("reset", env, config)
    if not observation.strip():
        raise kit.fail("reset", f"reset(**{_short(dict(config))}) returned an empty observation")
    with kit.check("reset", "goal"):
        goal = env.goal
    if not isinstance(goal, str) or not goal.strip():
        raise kit.fail("reset", f"goal after reset must be a non-empty str, got {_short(goal)}")
    if goal not in observation:
        raise kit.fail(
            "reset",
            f"the initial observation must contain the goal {goal!r}; got {_short(observation)}",
        )
    return observation


def _check_deterministic_reset(kit: _Kit, env: Any, config: Mapping[str, Any], first: str) -> None:
    name = "deterministic_reset"
    twin = kit.new(name)
    other = kit.reset(name, twin, config)
    if other != first:
        raise kit.fail(
            name,
            f"two fresh instances reset with {_short(dict(config))} gave different initial "
            f"observations: {_short(first)} != {_short(other)}",
        )
    again = kit.reset(name, env, config)
    if again != first:
        raise kit.fail(
            name,
            f"the same instance reset twice with {_short(dict(config))} gave different initial "
            f"observations: {_short(first)} != {_short(again)}",
        )
    # the runner resets with the validated config, defaults filled in
    with kit.check(name, "config_model.model_validate(config).model_dump(exclude_none=True)"):
        validated = (
            type(env).config_model.model_validate(dict(config)).model_dump(exclude_none=True)
        )
    filled = kit.reset(name, env, validated)
    if filled != first:
        raise kit.fail(
            name,
            f"the validated config {_short(validated)} (as the runner passes it) gave another "
            f"initial observation than {_short(dict(config))}: {_short(first)} != {_short(filled)}",
        )


def _check_nonsense(kit: _Kit, env: Any, config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    results = []
    for action in NONSENSE_ACTIONS:
        kit.reset("nonsense_actions", env, config)
        results.append((action, kit.step("nonsense_actions", env, action)))
    return results


def _check_step_result(kit: _Kit, action: str, result: Any) -> None:
    def fail(detail: str) -> ConformanceError:
        return kit.fail("step_types", f"step({_short(action, 40)}) {detail}")

    if not isinstance(result, StepResult):
        raise fail(f"returned {_short(result)}, not a StepResult")
    if not isinstance(result.observation, str):
        raise fail(f"gave observation {_short(result.observation)}, not a str")
    try:
        reward = float(result.reward)
    except (TypeError, ValueError) as exc:
        raise fail(f"gave reward {_short(result.reward)}, which float() refuses") from exc
    if math.isnan(reward):
        raise fail("gave a NaN reward")
    if not isinstance(result.done, bool):
        raise fail(f"gave done={_short(result.done)}, not a bool")
    if not isinstance(result.info, dict):
        raise fail(f"gave info={_short(result.info)}, not a dict")


def _steps(kit: _Kit, check: str, env: Any, actions: Sequence[str]) -> list[tuple[str, Any]]:
    """Step through ``actions``, stopping after a result that says ``done``."""
    results = []
    for action in actions:
        result = kit.step(check, env, action)
        results.append((action, result))
        if getattr(result, "done", False) is True:
            break
    return results


def _play(
    kit: _Kit, check: str, env: Any, config: Mapping[str, Any], actions: Sequence[str]
) -> list[tuple[str, Any]]:
    kit.reset(check, env, config)
    return _steps(kit, check, env, actions)


def _outcome(result: Any) -> tuple[Any, ...]:
    return (result.observation, float(result.reward), result.done)


def _check_deterministic_steps(
    kit: _Kit, env: Any, config: Mapping[str, Any], actions: Sequence[str], first: str
) -> None:
    name = "deterministic_steps"
    played = _play(kit, name, env, config, actions)
    again = kit.reset(name, env, config)
    if again != first:
        raise kit.fail(
            name,
            f"reset after steps gave a different initial observation than a fresh reset: "
            f"{_short(first)} != {_short(again)}",
        )
    replayed = _steps(kit, name, env, actions)
    twin_played = _play(kit, name, kit.new(name), config, actions)
    for label, other in (("the same instance", replayed), ("a fresh instance", twin_played)):
        for (action, result), (_, result2) in zip(played, other, strict=False):
            if _outcome(result) != _outcome(result2):
                raise kit.fail(
                    name,
                    f"step({_short(action, 40)}) after the same config and actions gave "
                    f"{_short(_outcome(result))}, and then, on {label}, "
                    f"{_short(_outcome(result2))}",
                )
        if len(other) != len(played):
            raise kit.fail(
                name,
                f"the same config and actions ended the episode at a different step on {label}",
            )


def _check_salient_state(kit: _Kit, env: Any, config: Mapping[str, Any]) -> None:
    kit.reset("salient_state", env, config)
    with kit.check("salient_state", "salient_state()"):
        state = env.salient_state()
    if state is not None and not isinstance(state, str):
        raise kit.fail("salient_state", f"salient_state() returned {_short(state)}, not str|None")


def _check_task_observation(kit: _Kit, env: Any) -> None:
    name = "task_observation"
    with kit.check(name, "goal"):
        goal = env.goal
    for sub_goal in (goal, _SUB_GOAL):
        with kit.check(name, f"task_observation({sub_goal!r})"):
            text = env.task_observation(sub_goal)
        if not isinstance(text, str) or not text.strip():
            raise kit.fail(
                name, f"task_observation({sub_goal!r}) returned {_short(text)}, not a non-empty str"
            )


def _check_is_failure(kit: _Kit, env: Any, observations: Sequence[str]) -> None:
    for observation in observations:
        with kit.check("is_failure", f"is_failure({_short(observation, 40)})"):
            verdict = env.is_failure(observation)
        if not isinstance(verdict, bool):
            raise kit.fail(
                "is_failure",
                f"is_failure({_short(observation, 40)}) returned {_short(verdict)}, not a bool",
            )


def _check_prompt_templates(kit: _Kit, env: Any) -> None:
    name = "prompt_templates"
    for kind in REQUIRED_PROMPTS:
        try:
            text = env.prompt_template(kind)
        except KeyError as exc:
            raise kit.fail(name, f"prompt_template({kind!r}) is missing (KeyError)") from exc
        except Exception as exc:
            raise kit.fail(
                name, f"prompt_template({kind!r}) raised {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(text, str) or not text.strip():
            raise kit.fail(name, f"prompt_template({kind!r}) returned {_short(text)}")
        template = string.Template(text)
        if not template.is_valid():
            raise kit.fail(
                name,
                f"the {kind} template is not a valid string.Template (write a literal $ as $$)",
            )
        identifiers = set(template.get_identifiers())
        unknown = identifiers - TEMPLATE_IDENTIFIERS
        if unknown:
            raise kit.fail(
                name,
                f"the {kind} template uses {', '.join(sorted('$' + i for i in unknown))}; "
                f"only $task and $context are substituted (write a literal $ as $$)",
            )
        if "task" not in identifiers:
            raise kit.fail(name, f"the {kind} template never uses $task")
    missing = "no-such-prompt-kind"
    try:
        env.prompt_template(missing)
    except KeyError:
        return
    except Exception as exc:
        raise kit.fail(
            name, f"prompt_template({missing!r}) must raise KeyError, raised {type(exc).__name__}"
        ) from exc
    raise kit.fail(name, f"prompt_template({missing!r}) must raise KeyError, returned a value")


def _check_close(kit: _Kit, env: Any) -> None:
    unused = kit.new("close")
    for instance, label in ((env, "a used instance"), (unused, "a never-reset instance")):
        for attempt in ("first", "second"):
            with kit.check("close", f"the {attempt} close() of {label}"):
                instance.close()


def check_environment(
    factory: Callable[[], Environment],
    configs: Sequence[Mapping[str, Any]] | None = None,
    *,
    actions: Sequence[str] = (),
    varying_tools: Collection[str] = (),
) -> ConformanceReport:
    """Check that the environments ``factory()`` makes honour the ``Environment`` contract.

    ``factory`` makes a new instance per call (an environment class with a no-argument
    constructor will do). ``configs`` are the keyword arguments to ``reset`` with, one episode
    each; by default ``default_configs(config_model)``.
    ``actions`` are extra (valid) actions to step through and check for types and determinism,
    besides ``NONSENSE_ACTIONS``. ``varying_tools``: tools whose results may differ between
    two fresh instances by design (they show an episode's own folder, or the process's
    environment); their calls are checked, but not compared across instances.
    Raises ``ConformanceError`` (an ``AssertionError``) naming
    the first check that failed; returns a report of the checks passed.
    """
    kit = _Kit(factory, environment=getattr(factory, "__name__", repr(factory)))
    try:
        env = kit.new("attributes")
        cls = type(env)
        kit.environment = f"{cls.__name__} ({getattr(cls, 'name', '?')!r})"
        _check_attributes(kit, cls)
        chosen = _check_config_model(kit, cls.config_model, configs)
        report = ConformanceReport(kit.environment, chosen, passed=["attributes", "config_model"])
        for config in chosen:
            first = _check_reset(kit, env, config)
            _check_deterministic_reset(kit, env, config, first)
            nonsense = _check_nonsense(kit, env, config)
            stepped = _play(kit, "step_types", env, config, actions)
            for action, result in [*nonsense, *stepped]:
                _check_step_result(kit, action, result)
            _check_deterministic_steps(kit, env, config, [*actions, *NONSENSE_ACTIONS], first)
            _check_salient_state(kit, env, config)
            _check_task_observation(kit, env)
            _check_is_failure(kit, env, [first, *(r.observation for _, r in [*nonsense, *stepped])])
            tools = check_tools(kit, env, config,
                                lambda action, result: _check_step_result(kit, action, result),
                                varying=frozenset(varying_tools))
            report.tools = sorted({*report.tools, *tools})
        report.passed.extend(CHECKS[CHECKS.index("reset") : CHECKS.index("prompt_templates")])
        _check_prompt_templates(kit, env)
        report.passed.append("prompt_templates")
        _check_close(kit, env)
        report.passed.append("close")
        return report
    finally:
        kit.close_all()
