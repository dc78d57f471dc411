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

import asyncio
import contextvars
import functools
import inspect
import threading
import typing
from abc import ABCMeta
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, ClassVar, Protocol, TypeVar, cast, runtime_checkable

from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings

from adapt.errors import InvalidConfig


@functools.lru_cache(maxsize=512)
def package_text(package: str, *parts: str) -> str | None:
    """The text of a package data file (None: no such file), read once per process: prompt
    templates are rendered on every LLM call."""
    path = resources.files(package).joinpath(*parts)
    return path.read_text(encoding="utf-8") if path.is_file() else None


def prompt_set_text(package: str, prompt_set: str, kind: str,
                    provides: Mapping[str, Collection[str]]) -> str | None:
    """``prompts/<prompt_set>/<kind>.txt`` of ``package`` when the set provides that kind
    (``provides``: set name -> its kinds); ``None`` for a kind it does not provide, which keeps
    the default template. A provided kind whose file is missing raises ``FileNotFoundError``:
    the installation lacks its package data, and the default prompt in its place would silently
    run another experiment."""
    if kind not in provides.get(prompt_set, ()):
        return None
    text = package_text(package, "prompts", prompt_set, f"{kind}.txt")
    if text is None:
        raise FileNotFoundError(
            f"prompt set {prompt_set!r} lacks prompts/{prompt_set}/{kind}.txt in package "
            f"{package}: the installation is missing its package data (reinstall adapt)")
    return text


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
class StartsFromConfig(Protocol):
    """``start(config)``: an episode from an already validated ``config_model`` instance (the
    engine then validates the configuration once, not again in ``reset``)."""

    def start(self, config: Any) -> str: ...


def invalid_config(env_name: str, error: ValidationError) -> InvalidConfig:
    """``<env>: invalid environment_config: <location>: <message>; ...``."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}"
        for e in error.errors(include_url=False))
    return InvalidConfig(f"{env_name}: invalid environment_config: {problems}")


def validate_config(env: object, config: Mapping[str, Any] | BaseModel) -> BaseModel:
    """``config`` as the environment's ``config_model`` (a model already of that class is
    taken as it is); raises ``InvalidConfig`` naming every bad field."""
    model: type[BaseModel] = getattr(env, "config_model", BaseModel)
    if isinstance(config, model):
        return config
    data = config.model_dump(exclude_unset=True) if isinstance(config, BaseModel) else config
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise invalid_config(str(getattr(env, "name", "environment")), exc) from None


def start_episode(env: Environment, config: BaseModel | Mapping[str, Any]) -> str:
    """Start an episode of ``env``: ``start(config)`` when the environment has it (and keeps
    ``BaseEnvironment.reset``), with ``config`` validated unless it is a validated model
    already; else ``reset`` with the fields that were set."""
    own_reset: object = type(env).reset
    if isinstance(env, StartsFromConfig) and own_reset is BaseEnvironment.reset:
        return env.start(validate_config(env, config))
    if isinstance(config, BaseModel):
        return env.reset(**config.model_dump(exclude_none=True, exclude_unset=True))
    return env.reset(**config)


@runtime_checkable
class AsyncStepping(Protocol):
    """Actions that can be awaited; a batch of them runs concurrently (the spec executor)."""

    async def astep(self, action: str) -> StepResult: ...


@runtime_checkable
class BlockingSteps(Protocol):
    """``blocking_steps = True``: ``step`` and starting an episode may block for seconds (a
    subprocess, a sandbox, a server); the engine then runs them in a worker thread
    (``step_async``, ``start_episode_async``; a pool of ``ENV_STEP_THREADS`` of their own), one
    at a time per environment, so the event loop (other tasks, a worker's lease heartbeat)
    keeps running meanwhile. So do the calls it makes between steps (``env_call``: the task
    observation, the verdicts, the salient state, checkpoints)."""

    blocking_steps: ClassVar[bool]


#: threads for blocking environment steps, per process: their own pool, so that slow steps
#: (a 10 s command each) never queue the event loop's other ``to_thread`` work (dispatching,
#: webhooks, telemetry) behind them in asyncio's small default pool
ENV_STEP_THREADS = 64
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_T = TypeVar("_T")


def _env_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(ENV_STEP_THREADS, thread_name_prefix="adapt-env")
        return _pool


async def _in_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` in the environment-step pool, with the caller's context variables."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        _env_pool(), functools.partial(context.run, fn, *args))


async def in_env_thread(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` in the environment-step pool (for work that may block on an environment,
    e.g. making a remote environment's class from its server's metadata), never in asyncio's
    small default pool."""
    return await _in_thread(fn, *args)


@functools.cache
def _protocol_members(proto: type) -> tuple[tuple[str, bool], ...]:
    """A runtime-checkable protocol's members, each with whether the protocol declares it as a
    method (read once: Python 3.11's ``isinstance`` reads them again on every check)."""
    names = typing._get_protocol_attrs(proto)  # type: ignore[attr-defined]
    return tuple((name, callable(getattr(proto, name, None))) for name in sorted(names))


def conforms(obj: object, proto: Any) -> bool:
    """``isinstance(obj, proto)`` for a runtime-checkable protocol, with the same answer in
    every case, at a fraction of the cost: the engine asks the environment such questions on
    every step (``blocks``, ``step_async``, ``env_call``), and Python 3.11's protocol check
    walks the protocol's MRO each time (about 3 % of a worker's CPU per LLM call). The
    members are checked on ``obj`` as ``isinstance`` does (present, and a method not set to
    None); what fails that is asked of ``ABCMeta`` (nominal and registered subclasses, cached
    by class), which ``isinstance`` falls back to as well."""
    for name, method in _protocol_members(proto):
        try:
            value = getattr(obj, name)
        except AttributeError:
            break
        if method and value is None:
            break
    else:
        return True
    return ABCMeta.__instancecheck__(proto, obj)


def blocks(env: object) -> bool:
    """Whether ``env`` declares that its steps block (see :class:`BlockingSteps`)."""
    return conforms(env, BlockingSteps) and cast(BlockingSteps, env).blocking_steps is True


async def step_async(env: Environment, action: str) -> StepResult:
    """One action, as the engine takes it: ``await env.astep(action)`` when the environment has
    an async ``astep``; ``env.step`` in a worker thread when its steps block; else
    ``env.step``."""
    if conforms(env, AsyncStepping):
        astep = cast(AsyncStepping, env).astep
        if inspect.iscoroutinefunction(astep):
            return await astep(action)
    if blocks(env):
        return await _in_thread(env.step, action)
    return env.step(action)


async def env_call(env: object, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)``, a member of ``env`` the engine calls between steps (a task
    observation, a verdict, the salient state, a checkpoint): in a worker thread when the
    environment's steps block (a remote environment asks its server), else directly."""
    if blocks(env):
        return await _in_thread(functools.partial(fn, *args, **kwargs))
    return fn(*args, **kwargs)


async def start_episode_async(env: Environment, config: BaseModel | Mapping[str, Any]) -> str:
    """``start_episode`` as the engine calls it: in a worker thread when the environment's
    steps block (starting may prepare what it needs, e.g. a file system)."""
    if blocks(env):
        return await _in_thread(start_episode, env, config)
    return start_episode(env, config)


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


@runtime_checkable
class RollsBack(Protocol):
    """Failed sub-tasks can be undone: when ``rolls_back()`` says so, the controller takes a
    ``checkpoint()`` before each executor attempt and ``rollback(mark)`` after a failed one
    (ADaPT's ALFWorld runs)."""

    def rolls_back(self) -> bool: ...

    def checkpoint(self) -> object: ...

    def rollback(self, mark: object) -> None: ...


@runtime_checkable
class FinalAction(Protocol):
    """``final_action``: sent when a task ends before its episode is done, so the last state is
    scored (InterCode-SQL: ``submit``); ``None``: nothing is sent."""

    final_action: ClassVar[str | None]


@runtime_checkable
class SuccessReward(Protocol):
    """``success_reward``: the reward at or above which an episode succeeded (``None``: the
    environment gives no such verdict and trials count the executor's own)."""

    success_reward: ClassVar[float | None]


@runtime_checkable
class DecodingGrammars(Protocol):
    """GBNF grammars of valid output for the current state (``action``, ``react``, ``plan``);
    ``None`` for a kind the environment has no grammar of."""

    def decoding_grammar(self, kind: str) -> str | None: ...


@runtime_checkable
class PromptVariables(Protocol):
    """Variables the environment adds to its prompt templates (ALFWorld: ``$room``, the room
    without the task), besides the engine's ``$task``, ``$context`` and the like."""

    def prompt_variables(self) -> Mapping[str, str]: ...


@runtime_checkable
class PaperSettings(Protocol):
    """``paper_profile``: what profile ``paper`` sets for this environment (sections
    ``executor``, ``planner``, ``monitor``, ``environment_config`` and ``by_executor``)."""

    paper_profile: ClassVar[Mapping[str, Any]]


def undoable(env: object) -> RollsBack | None:
    """``env`` when it rolls failed sub-tasks back (see :class:`RollsBack`), else ``None``."""
    rolls = cast(RollsBack, env)
    return rolls if conforms(env, RollsBack) and rolls.rolls_back() else None


def final_action(env: object) -> str | None:
    return cast(FinalAction, env).final_action if conforms(env, FinalAction) else None


def success_reward(env: object) -> float | None:
    value = env.success_reward if isinstance(env, SuccessReward) else None
    return None if value is None else float(value)


def decoding_grammar(env: object, kind: str) -> str | None:
    return env.decoding_grammar(kind) if isinstance(env, DecodingGrammars) else None


def prompt_variables(env: object) -> Mapping[str, str]:
    return env.prompt_variables() if isinstance(env, PromptVariables) else {}


def paper_profile(env: object) -> Mapping[str, Any]:
    """The environment's paper settings (class or instance), ``{}`` when it has none."""
    own = getattr(env, "paper_profile", None)  # also on a class, which protocols do not check
    return own if isinstance(own, Mapping) else {}


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
    #: prompt sets a config may choose (``prompts``): set name -> the kinds it provides, in
    #: ``prompts/<set>/<kind>.txt``
    prompt_sets: ClassVar[Mapping[str, Collection[str]]] = {}
    #: the operator's settings this environment reads (servers, credentials, folders): a
    #: pydantic-settings class with the environment's own prefix (e.g. ``ADAPT_SQL_``), read
    #: where the environment needs them; ``adapt docs configuration`` lists its fields.
    #: ``None``: the environment has none. The core ``Settings`` never holds them.
    settings_model: ClassVar[type[BaseSettings] | None] = None
    #: the reward at or above which an episode succeeded, when the environment gives such a
    #: verdict (TextCraft, ALFWorld, InterCode-SQL: 1.0); ``None``: it does not, and trials
    #: (``try_again``, ``reflexion``) count the executor's own verdict
    success_reward: ClassVar[float | None] = None
    #: an action the engine sends when a task ends (turn limit, failure) before the episode is
    #: done, so its last state is scored (InterCode-SQL: ``submit``); ``None``: nothing
    final_action: ClassVar[str | None] = None

    def reset(self, **config: Any) -> str:
        """Validate ``config`` against ``config_model`` and ``start`` the episode (a subclass
        implements ``start(config)``, or overrides ``reset``)."""
        if not isinstance(self, StartsFromConfig):
            raise NotImplementedError(f"{type(self).__name__} implements neither start nor reset")
        return self.start(validate_config(self, config))

    def current_prompt_set(self) -> str | None:
        """The prompt set the current episode's config chose (``prompts``), or ``None``."""
        return None

    def prompt_template(self, kind: str) -> str:
        """``prompts/<kind>.txt`` of ``prompt_package``; with a prompt set chosen
        (``current_prompt_set``), ``prompts/<set>/<kind>.txt`` for the kinds the set has
        (``prompt_sets``; the other kinds keep the default). A file of the set that is missing
        raises ``FileNotFoundError``."""
        if self.prompt_package is None:
            raise KeyError(kind)
        chosen = self.current_prompt_set()
        if chosen is not None:
            text = prompt_set_text(self.prompt_package, chosen, kind, self.prompt_sets)
            if text is not None:
                return text
        text = package_text(self.prompt_package, "prompts", f"{kind}.txt")
        if text is None:
            raise KeyError(kind)
        return text

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
