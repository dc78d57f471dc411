"""The simulator registry and ``from_spec``: model spec string -> simulated ``ChatModel``.

Add a simulator (e.g. for another environment) with ``register_simulator``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapt.errors import ModelSpecError
from adapt.llm.base import ChatModel
from adapt.sim import textcraft
from adapt.sim.spec import Knob, KnobValue, canonical_spec, parse_knobs, split_spec


@dataclass(frozen=True, slots=True)
class Simulator:
    name: str
    description: str
    knobs: tuple[Knob, ...]
    factory: Callable[[dict[str, KnobValue]], ChatModel]
    #: the environments it can play (it reads their prompts); empty: any
    environments: tuple[str, ...] = ()

    @property
    def default_spec(self) -> str:
        return canonical_spec(self.name, self.knobs, {k.name: k.default for k in self.knobs})


SIMULATORS: dict[str, Simulator] = {}


def register_simulator(simulator: Simulator) -> None:
    SIMULATORS[simulator.name] = simulator


register_simulator(
    Simulator(
        name=textcraft.SIMULATOR_NAME,
        description="a weak LLM agent for TextCraft (executor and planner), read from the prompt",
        knobs=textcraft.KNOBS,
        factory=textcraft.create,
        environments=("textcraft",),
    )
)


def available_simulators() -> list[str]:
    """Names of the registered simulators, sorted."""
    return sorted(SIMULATORS)


def get_simulator(name: str) -> Simulator:
    simulator = SIMULATORS.get(name.strip().lower())
    if simulator is None:
        raise ModelSpecError(
            f"unknown simulator {name!r}; available: {', '.join(available_simulators())}"
        )
    return simulator


def is_known_simulator(spec: str) -> bool:
    """Whether ``spec`` names a registered simulator (knobs are not checked)."""
    try:
        name, _ = split_spec(spec)
    except ModelSpecError:
        name = spec.removeprefix("sim:").partition("?")[0].strip().lower()
    return name in SIMULATORS


def from_spec(spec: str) -> ChatModel:
    """``sim:textcraft?capability=1&error_rate=0.1&seed=7`` (``sim:`` optional) -> a model.

    Raises ``ModelSpecError`` for an unknown simulator or a bad knob.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError(
            f"empty model spec; available simulators: {', '.join(available_simulators())}"
        )
    name, pairs = split_spec(spec)
    simulator = get_simulator(name)
    values = parse_knobs(simulator.name, simulator.knobs, pairs)
    return simulator.factory(values)
