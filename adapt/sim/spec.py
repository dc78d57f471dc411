"""Model spec strings for simulators: ``sim:<name>?knob=value&knob=value``.

The ``sim:`` prefix is optional. Knobs are typed and range-checked; errors raise
``ModelSpecError`` naming the bad knob and listing the valid ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from adapt.errors import ModelSpecError

SPEC_PREFIX = "sim:"

KnobValue = int | float


@dataclass(frozen=True, slots=True)
class Knob:
    name: str
    type: type[int] | type[float]
    default: KnobValue
    minimum: KnobValue | None = None
    maximum: KnobValue | None = None
    help: str = ""
    #: always written in the canonical spec (others only when not at their default)
    always_shown: bool = False

    def describe(self) -> str:
        bounds = ""
        if self.minimum is not None and self.maximum is not None:
            bounds = f" in [{format_value(self.minimum)}, {format_value(self.maximum)}]"
        elif self.minimum is not None:
            bounds = f" >= {format_value(self.minimum)}"
        return f"{self.name} ({self.type.__name__}{bounds}, default {format_value(self.default)})"

    def parse(self, raw: str) -> KnobValue:
        text = raw.strip()
        value: KnobValue
        try:
            value = int(text) if self.type is int else float(text)
        except ValueError:
            kind = "an integer" if self.type is int else "a number"
            raise ModelSpecError(f"knob {self.name!r} must be {kind}, got {raw!r}") from None
        return self.check(value)

    def check(self, value: object) -> KnobValue:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ModelSpecError(f"knob {self.name!r} must be a number, got {value!r}")
        if self.type is int:
            if isinstance(value, float):
                if not value.is_integer():
                    raise ModelSpecError(f"knob {self.name!r} must be an integer, got {value!r}")
                value = int(value)
        else:
            value = float(value)
            if not math.isfinite(value):
                raise ModelSpecError(f"knob {self.name!r} must be finite, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ModelSpecError(f"knob {self.name!r} must be {self._range()}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ModelSpecError(f"knob {self.name!r} must be {self._range()}, got {value!r}")
        return value

    def _range(self) -> str:
        if self.maximum is None:
            return f">= {format_value(self.minimum or 0)}"
        return f"between {format_value(self.minimum or 0)} and {format_value(self.maximum)}"


def format_value(value: KnobValue) -> str:
    """``0.1`` -> ``0.1``, ``0.0`` -> ``0``, ``1.0`` -> ``1``, ``7`` -> ``7``."""
    if isinstance(value, int):
        return str(value)
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def split_spec(spec: str) -> tuple[str, list[tuple[str, str]]]:
    """``sim:textcraft?capability=2`` -> (``textcraft``, [(``capability``, ``2``)])."""
    text = spec.strip()
    if text.lower().startswith(SPEC_PREFIX):
        text = text[len(SPEC_PREFIX) :]
    name, _, query = text.partition("?")
    pairs: list[tuple[str, str]] = []
    for part in query.split("&"):
        if not part.strip():
            continue
        if "=" not in part:
            raise ModelSpecError(f"knob {part.strip()!r} in model spec {spec!r} needs a value")
        pairs.extend(parse_qsl(part, keep_blank_values=True))
    return name.strip().lower(), pairs


def parse_knobs(
    simulator: str, knobs: tuple[Knob, ...], pairs: list[tuple[str, str]]
) -> dict[str, KnobValue]:
    """Typed, validated knob values (defaults filled in)."""
    by_name = {k.name: k for k in knobs}
    values: dict[str, KnobValue] = {}
    for key, raw in pairs:
        name = key.strip().lower()
        knob = by_name.get(name)
        if knob is None:
            raise ModelSpecError(
                f"unknown knob {key!r} for simulator {simulator!r}; {_valid(knobs)}"
            )
        if name in values:
            raise ModelSpecError(f"knob {name!r} given twice; {_valid(knobs)}")
        if not raw.strip():
            raise ModelSpecError(f"knob {name!r} needs a value; {_valid(knobs)}")
        try:
            values[name] = knob.parse(raw)
        except ModelSpecError as exc:
            raise ModelSpecError(f"{exc}; {_valid(knobs)}") from None
    return {k.name: values.get(k.name, k.default) for k in knobs}


def _valid(knobs: tuple[Knob, ...]) -> str:
    return "valid knobs: " + ", ".join(k.describe() for k in knobs)


def check_knobs(
    simulator: str, knobs: tuple[Knob, ...], given: Mapping[str, object]
) -> dict[str, KnobValue]:
    """Validate keyword arguments the same way spec strings are validated."""
    by_name = {k.name: k for k in knobs}
    values: dict[str, KnobValue] = {}
    for name, value in given.items():
        knob = by_name.get(name)
        if knob is None:
            raise ModelSpecError(
                f"unknown knob {name!r} for simulator {simulator!r}; {_valid(knobs)}"
            )
        try:
            values[name] = knob.check(value)
        except ModelSpecError as exc:
            raise ModelSpecError(f"{exc}; {_valid(knobs)}") from None
    return {k.name: values.get(k.name, k.default) for k in knobs}


def canonical_spec(simulator: str, knobs: tuple[Knob, ...], values: Mapping[str, KnobValue]) -> str:
    """``sim:<name>?k=v&...``: always-shown knobs plus the others that differ from default."""
    parts = [
        f"{k.name}={format_value(values[k.name])}"
        for k in knobs
        if k.always_shown or values[k.name] != k.default
    ]
    return f"{SPEC_PREFIX}{simulator}" + (f"?{'&'.join(parts)}" if parts else "")
