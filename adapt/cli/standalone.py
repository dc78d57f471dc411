"""Run one task locally, with no server and no database (what ``adapt run`` does)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapt.engine import RunConfig, TreeSink, run_task
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
    from adapt.service.model_factory import ModelFactory

    factory = ModelFactory(settings, operator=True)  # the operator's CLI: loopback allowed
    default, notice = settings.resolve_default_model()
    base = model or default
    if model:
        notice = None
    ex_spec = executor_model or base
    pl_spec = planner_model or base
    if executor_model and planner_model:
        notice = None

    def load(spec: str) -> ChatModel:
        factory.check(spec, environment)
        return factory.build(spec)

    executor = load(ex_spec)
    planner = executor if pl_spec == ex_spec else load(pl_spec)
    return Models(executor, planner, notice)


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


async def run_local(
    env_name: str,
    env_config: dict[str, Any],
    config: RunConfig,
    models: Models,
    *,
    goal: str | None = None,
    sink: TreeSink | None = None,
    cascade: Sequence[ChatModel] | None = None,
) -> TaskResult:
    """Run one task in this process. ``cascade``: the executor models in order
    (``executor.models``), in place of ``models.executor``."""
    validated = registry.validate_config(env_name, env_config)  # once, here at the edge
    env = registry.create(env_name)
    try:
        return await run_task(env, validated, config, list(cascade) if cascade
                              else models.executor, models.planner, goal=goal, sink=sink)
    finally:
        env.close()
