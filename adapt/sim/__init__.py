"""Simulated LLM backends that read only the prompt text (offline, deterministic).

``from_spec("sim:textcraft?capability=1&error_rate=0.1&seed=7")`` returns a ``ChatModel``.
The OpenAI-compatible HTTP server lives in ``adapt.sim.server`` (imported on demand only).
"""

from __future__ import annotations

from adapt.sim.registry import (
    SIMULATORS,
    Simulator,
    available_simulators,
    from_spec,
    register_simulator,
)
from adapt.sim.textcraft import SimTextCraftModel

__all__ = [
    "SIMULATORS",
    "SimTextCraftModel",
    "Simulator",
    "available_simulators",
    "from_spec",
    "register_simulator",
]
