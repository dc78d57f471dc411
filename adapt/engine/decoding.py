"""The decoding monitor inside ADaPT: the executor's and the planner's output formats.

- The planner's output is governed by the built-in ``planner`` spec (``# Think:`` lines and
  ``Step N:`` lines, then one ``Execution Order:`` line), for every environment.
- The executor's one line per step is governed by the environment's own spec, if it ships one
  as the prompt template ``executor_spec`` (TextCraft: exactly one thought or one ``get`` /
  ``craft`` / ``inventory`` action, each with its argument syntax). Environments without one
  are not monitored on the executor side.

With ``RunConfig.monitor.enabled`` off, calls go straight to the model as before.
"""

from __future__ import annotations

import threading

from adapt.engine.runtime import Run
from adapt.engine.spec.generate import Generation, monitored_generate
from adapt.engine.spec.model import Spec
from adapt.engine.spec.monitor import Monitor
from adapt.engine.tree import Node
from adapt.envs.base import Environment, decoding_grammar
from adapt.llm.base import ChatModel, ChatRequest

_lock = threading.Lock()
_monitors: dict[tuple[str, str], Monitor | None] = {}


def planner_monitor() -> Monitor:
    with _lock:
        monitor = _monitors.get(("", "planner"))
        if monitor is None:
            monitor = Monitor(Spec.builtin("planner"))
            _monitors[("", "planner")] = monitor
        return monitor


def executor_monitor(env: Environment) -> Monitor | None:
    """The environment's executor spec (its ``executor_spec`` prompt template), if any."""
    key = (type(env).__module__ + "." + type(env).__qualname__, "executor")
    with _lock:
        if key in _monitors:
            return _monitors[key]
    try:
        text = env.prompt_template("executor_spec")
    except KeyError:
        monitor = None
    else:
        monitor = Monitor(Spec.parse(text))
    with _lock:
        _monitors[key] = monitor
    return monitor


def env_grammar(run: Run, kind: str) -> str | None:
    """The environment's GBNF grammar of ``kind`` (``action``, ``react``, ``plan``) when
    ``RunConfig.grammar`` is on and the environment has one (``decoding_grammar``)."""
    if not run.config.grammar:
        return None
    return decoding_grammar(run.env, kind)


async def generate(run: Run, model: ChatModel, request: ChatRequest, node: Node,
                   monitor: Monitor | None) -> tuple[str, Generation | None]:
    """The model's text for ``request``: monitored when enabled and a spec applies."""
    if monitor is None or not run.config.monitor.enabled:
        response = await run.call(model, request, node)
        return response.text, None
    generation = await monitored_generate(
        lambda req, annotate: run.call(model, req, node, annotate=annotate),
        request, monitor, max_corrections=run.config.monitor.max_corrections,
        continue_on_length=False,  # max_tokens is the step's or the plan's whole budget
    )
    return generation.text, generation
