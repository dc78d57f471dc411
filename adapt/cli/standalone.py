"""Run one task locally, with no server and no database (what ``adapt run`` does)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapt.engine import RunConfig, TreeSink, run_task
from adapt.engine.config import ModelSpecs, ResolvedConfig
from adapt.engine.resolve import resolve_config
from adapt.engine.tree import TaskResult
from adapt.envs import registry
from adapt.errors import InvalidConfig
from adapt.llm.base import ChatModel
from adapt.settings import Settings


@dataclass
class Models:
    executor: ChatModel
    planner: ChatModel
    notice: str | None  # set when the simulated default was chosen

    def names(self) -> dict[str, str]:
        def label(m: ChatModel) -> str:
            return f"{m.name} (SIMULATED)" if m.simulated else m.name

        return {"executor": label(self.executor), "planner": label(self.planner)}

    def describe(self) -> dict[str, dict[str, object]]:
        return {
            role: {"name": m.name, "simulated": m.simulated}
            for role, m in (("executor", self.executor), ("planner", self.planner))
        }


def model_specs(
    settings: Settings,
    *,
    model: str | None = None,
    executor_model: str | None = None,
    planner_model: str | None = None,
    cascade: Sequence[str] | None = None,
) -> tuple[ModelSpecs, str | None]:
    """The models a local run names (``--model`` for both roles, ``--executor-model``,
    ``--planner-model``, or ``--cascade``: the executor models in order, the planner
    ``--planner-model``, else ``--model``, else the first), and the notice when the settings'
    simulated default was chosen."""
    default, notice = settings.resolve_default_model()
    if cascade:
        return ModelSpecs(executor=tuple(cascade),
                          planner=planner_model or model or cascade[0]), None
    base = model or default
    if model or (executor_model and planner_model):
        notice = None
    return ModelSpecs(executor=(executor_model or base,), planner=planner_model or base), notice


def build_models(settings: Settings, specs: ModelSpecs, notice: str | None = None, *,
                 environment: str | None = None) -> tuple[Models, list[ChatModel]]:
    """The models ``specs`` name, each spec built once (the operator's CLI: loopback endpoints
    and any ``.gguf`` allowed): the roles, and the executor models in cascade order. Given the
    ``environment``, a simulator that cannot play it is refused (``ModelSpecError``)."""
    from adapt.service.model_factory import ModelFactory

    factory = ModelFactory(settings, operator=True)
    built: dict[str, ChatModel] = {}

    def build(spec: str) -> ChatModel:
        if spec not in built:
            if environment is not None:
                factory.check(spec, environment)
            built[spec] = factory.build(spec)
        return built[spec]

    chain = [build(spec) for spec in specs.executor]
    return Models(chain[0], build(specs.planner), notice), chain


def load_models(
    settings: Settings,
    *,
    model: str | None = None,
    executor_model: str | None = None,
    planner_model: str | None = None,
    environment: str | None = None,
) -> Models:
    """The models to run; given the ``environment``, a simulator that cannot play it is
    refused (``ModelSpecError``)."""
    specs, notice = model_specs(settings, model=model, executor_model=executor_model,
                                planner_model=planner_model)
    return build_models(settings, specs, notice, environment=environment)[0]


def parse_config_json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidConfig(f"--config is not valid JSON ({exc.msg} at position {exc.pos}): "
                            f"{text!r}") from None
    if not isinstance(value, dict):
        raise InvalidConfig(f"--config must be a JSON object, got {type(value).__name__}")
    return value


def resolve_local(env_name: str, env_config: dict[str, Any], config: RunConfig,
                  specs: ModelSpecs) -> tuple[ResolvedConfig, dict[str, Any]]:
    """A local run's configuration, resolved once (the profile's settings for the run and the
    environment config, the models); ``UserError`` for an unknown environment."""
    resolved, merged = resolve_config(config, registry.get(env_name), env_config, models=specs)
    return resolved, dict(merged) if isinstance(merged, dict) else merged.model_dump()


async def run_local(
    env_name: str,
    env_config: dict[str, Any],
    config: ResolvedConfig,
    models: Models,
    *,
    goal: str | None = None,
    sink: TreeSink | None = None,
    cascade: Sequence[ChatModel] | None = None,
) -> TaskResult:
    """Run one task in this process with its resolved ``config`` (``resolve_local``).
    ``cascade``: the executor models in order, in place of ``models.executor``."""
    validated = registry.validate_config(env_name, env_config)  # once, here at the edge
    env = registry.create(env_name)
    try:
        return await run_task(env, validated, config, list(cascade) if cascade
                              else models.executor, models.planner, goal=goal, sink=sink)
    finally:
        env.close()
