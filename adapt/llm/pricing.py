"""Dollar cost of LLM calls: a price table per model, overridable from settings.

Prices are US dollars per **million** tokens, ``(prompt, completion)``. A model name matches
its exact entry or, failing that, the longest known entry it starts with followed by ``-``,
so dated variants such as ``gpt-4o-mini-2024-07-18`` use the ``gpt-4o-mini`` price while
``gpt-4o`` never picks up the ``gpt-4`` price. Unknown models cost ``None`` (reported as
unknown, never as zero); simulated models cost ``0.0``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from adapt.errors import InvalidConfig
from adapt.llm.base import Usage

logger = logging.getLogger(__name__)

Price = tuple[float, float]  # dollars per million (prompt, completion) tokens

#: Standard (non-batch, non-cached) list prices in USD per 1M tokens.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "gpt-3.5-turbo-instruct": (1.50, 2.00),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}

# Backend prefixes a caller may leave on a model name (``ChatModel.name`` or a spec).
_BACKEND_PREFIXES = ("openai-completions:", "openai:")


def _normalise(model_name: str) -> str:
    name = model_name.strip().lower()
    for prefix in _BACKEND_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.split("@http", 1)[0] if "@http" in name else name


class Pricing:
    """A price table: :data:`DEFAULT_PRICES` updated with ``overrides``."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        table = dict(DEFAULT_PRICES)
        for name, (prompt, completion) in (overrides or {}).items():
            table[name] = (float(prompt), float(completion))
        self._table = {name.strip().lower(): price for name, price in table.items()}

    @classmethod
    def from_setting(cls, text: str | None) -> Pricing:
        """A table from a settings value (see :func:`parse_price_overrides`)."""
        return cls(parse_price_overrides(text))

    @property
    def table(self) -> dict[str, Price]:
        return dict(self._table)

    def price(self, model_name: str) -> Price | None:
        """The price of ``model_name``: exact match, else the longest ``<known>-`` prefix."""
        name = _normalise(model_name)
        if name in self._table:
            return self._table[name]
        best: str | None = None
        for known in self._table:
            if name.startswith(known + "-") and (best is None or len(known) > len(best)):
                best = known
        return self._table[best] if best is not None else None

    def cost(self, model_name: str, usage: Usage, *, simulated: bool = False) -> float | None:
        """Dollars for one call; ``0.0`` when simulated or run in process (``local:``),
        ``None`` for an unknown model."""
        if simulated or model_name.startswith(LOCAL_PREFIX):
            return 0.0
        price = self.price(model_name)
        if price is None:
            return None
        prompt, completion = price
        return (usage.prompt_tokens * prompt + usage.completion_tokens * completion) / 1_000_000


#: models run in this process (``local:smollm2``) cost nothing per call
LOCAL_PREFIX = "local:"


def parse_price_overrides(text: str | None) -> dict[str, Price]:
    """Parse a settings value: a JSON object of model name → price.

    A price is ``[prompt, completion]`` or ``{"prompt": p, "completion": c}`` in dollars per
    million tokens, e.g. ``{"my-model": [0.1, 0.2]}``. Empty or blank text gives ``{}``.
    Raises :class:`~adapt.errors.InvalidConfig` with what is wrong.
    """
    if text is None or not text.strip():
        return {}
    example = 'e.g. {"my-model": [0.1, 0.2]} (dollars per million prompt/completion tokens)'
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidConfig(f"price overrides are not valid JSON ({exc}); {example}") from exc
    if not isinstance(data, dict):
        raise InvalidConfig(f"price overrides must be a JSON object; {example}")
    out: dict[str, Price] = {}
    for name, value in data.items():
        given: list[object]
        if isinstance(value, dict):
            given = [value.get("prompt"), value.get("completion")]
        elif isinstance(value, list):
            given = list(value)
        else:
            given = []
        pair = [float(v) for v in given if isinstance(v, int | float) and not isinstance(v, bool)
                and v >= 0]
        if len(given) != 2 or len(pair) != 2:
            raise InvalidConfig(
                f"price for {name!r} must be two non-negative numbers [prompt, completion], "
                f"got {value!r}; {example}"
            )
        out[str(name)] = (pair[0], pair[1])
    return out


_DEFAULT = Pricing()


def cost(model_name: str, usage: Usage, simulated: bool = False) -> float | None:
    """Dollars for one call using the default table (see :meth:`Pricing.cost`)."""
    return _DEFAULT.cost(model_name, usage, simulated=simulated)
