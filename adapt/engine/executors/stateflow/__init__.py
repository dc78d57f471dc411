"""StateFlow (Wu et al., 2024): task solving as a state machine of LLM and tool outputs.

The ``stateflow`` executor (``executor.kind="stateflow"``: one machine run per ADaPT node) is
``StateFlowExecutor``; the standalone ``stateflow`` strategy is in ``adapt.engine.strategies``. Machines are YAML
data validated by ``Machine`` (see ``models``); the environment's name picks the built-in
machine (``machines/<env.name>.yaml``) unless one is registered with ``register_machine``.
"""

from __future__ import annotations

from adapt.engine.executors.stateflow.executor import StateFlowExecutor
from adapt.engine.executors.stateflow.loader import (
    builtin_machines,
    load_machine,
    machine_for_env,
    parse_machine,
    register_machine,
    unregister_machine,
)
from adapt.engine.executors.stateflow.models import Machine, Output, Rule, State, Transition

__all__ = [
    "Machine", "Output", "Rule", "State", "StateFlowExecutor", "Transition", "builtin_machines",
    "load_machine", "machine_for_env", "parse_machine", "register_machine", "unregister_machine",
]
