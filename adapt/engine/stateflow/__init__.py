"""StateFlow (Wu et al., 2024): task solving as a state machine of LLM and tool outputs.

Importing this package registers the ``stateflow`` executor (``executor.kind="stateflow"``:
one machine run per ADaPT node) and the standalone ``stateflow`` strategy. Machines are YAML
data validated by ``Machine`` (see ``models``); the environment's name picks the built-in
machine (``machines/<env.name>.yaml``) unless one is registered with ``register_machine``.
"""

from __future__ import annotations

from adapt.engine.executors import register_executor
from adapt.engine.stateflow.loader import (
    builtin_machines,
    load_machine,
    machine_for_env,
    parse_machine,
    register_machine,
    unregister_machine,
)
from adapt.engine.stateflow.models import Machine, Output, Rule, State, Transition
from adapt.engine.stateflow.runner import StateFlowExecutor
from adapt.engine.stateflow.strategy import stateflow_strategy

register_executor("stateflow", lambda run, steps: StateFlowExecutor(run, max_steps=steps))

__all__ = [
    "Machine", "Output", "Rule", "State", "StateFlowExecutor", "Transition", "builtin_machines",
    "load_machine", "machine_for_env", "parse_machine", "register_machine", "stateflow_strategy",
    "unregister_machine",
]
