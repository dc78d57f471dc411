"""Dollar cost of LLM calls: the operator's prices first, then a maintained price source.

Prices are US dollars per **million** tokens. The maintained source is the ``genai-prices``
package (Pydantic's price data, the snapshot shipped with the installed version; nothing is
fetched at run time), asked for OpenAI's prices: adapt's ``openai:`` specs reach OpenAI
unless the operator names another endpoint. Operators override or add models with
``ADAPT_PRICING`` (:class:`ModelPrice`). An override matches its exact model name or, failing
that, the longest override it starts with followed by ``-``, so dated variants such as
``gpt-4o-mini-2024-07-18`` use the ``gpt-4o-mini`` price while ``gpt-4o`` never picks up a
``gpt-4`` price (genai-prices matches dated variants the same way).

Cached prompt tokens (those the provider served from its prompt cache, part of the prompt
tokens) are charged as providers charge them: at the cached-input price where there is one
(OpenAI: half or less of the input price), else at the input price. Unknown models cost
``None`` (reported as unknown, never as zero); simulated, scripted and in-process
(``local:``) models cost ``0.0``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapt.llm.base import Usage

logger = logging.getLogger(__name__)

#: the provider whose prices genai-prices is asked for
PROVIDER = "openai"

# Backend prefixes a caller may leave on a model name (``ChatModel.name`` or a spec).
_BACKEND_PREFIXES = ("openai-completions:", "openai:")

#: models run in this process (``local:smollm2``) cost nothing per call
LOCAL_PREFIX = "local:"


class ModelPrice(BaseModel):
    """One model's prices in dollars per million tokens. Written as an object, or as a list
    ``[prompt, completion]`` (or ``[prompt, completion, cached_prompt]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: float = Field(ge=0, description="per million prompt (input) tokens")
    completion: float = Field(ge=0, description="per million completion (output) tokens")
    cached_prompt: float | None = Field(
        default=None, ge=0, description="per million prompt tokens served from the provider's "
        "cache; unset: the prompt price")

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if len(value) not in (2, 3):
                raise ValueError("a price list is [prompt, completion] or "
                                 "[prompt, completion, cached_prompt]")
            return dict(zip(("prompt", "completion", "cached_prompt"), value, strict=False))
        return value

    def cost(self, usage: Usage) -> float:
        cached = min(max(usage.cached_tokens, 0), usage.prompt_tokens)
        cached_price = self.prompt if self.cached_prompt is None else self.cached_prompt
        return ((usage.prompt_tokens - cached) * self.prompt + cached * cached_price
                + usage.completion_tokens * self.completion) / 1_000_000


def _normalise(model_name: str) -> str:
    name = model_name.strip().lower()
    for prefix in _BACKEND_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return name.split("@http", 1)[0] if "@http" in name else name


def _maintained(name: str, usage: Usage) -> tuple[str, float] | None:
    """genai-prices' model id for ``name`` at OpenAI and the call's cost; ``None`` when it
    does not know the model."""
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    cached = min(max(usage.cached_tokens, 0), usage.prompt_tokens)
    try:
        price = calc_price(PriceUsage(input_tokens=usage.prompt_tokens,
                                      cache_read_tokens=cached or None,
                                      output_tokens=usage.completion_tokens),
                           name, provider_id=PROVIDER)
    except LookupError:
        return None
    total: Decimal = price.total_price
    return price.model.id.lower(), float(total)


class Pricing:
    """The operator's ``overrides`` (model name -> :class:`ModelPrice`), then genai-prices."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        self._overrides = {name.strip().lower(): price
                           for name, price in (overrides or {}).items()}

    @property
    def overrides(self) -> dict[str, ModelPrice]:
        return dict(self._overrides)

    def _prefix(self, name: str) -> str | None:
        """The longest override ``name`` extends with ``-...`` (a dated variant)."""
        best: str | None = None
        for known in self._overrides:
            if name.startswith(known + "-") and (best is None or len(known) > len(best)):
                best = known
        return best

    def cost(self, model_name: str, usage: Usage, *, simulated: bool = False) -> float | None:
        """Dollars for one call; ``0.0`` when simulated or run in process (``local:``),
        ``None`` for an unknown model.

        An override of the exact name wins; one the name extends (``gpt-4o`` for
        ``gpt-4o-2024-08-06``) wins too, unless genai-prices knows the model by a name that
        extends the override's (``gpt-4o-mini``: its own price, not ``gpt-4o``'s)."""
        if simulated or model_name.startswith(LOCAL_PREFIX):
            return 0.0
        name = _normalise(model_name)
        if not name:
            return None
        if name in self._overrides:
            return self._overrides[name].cost(usage)
        known = self._prefix(name)
        maintained = _maintained(name, usage)
        if known is not None and (maintained is None
                                  or not maintained[0].startswith(known + "-")):
            return self._overrides[known].cost(usage)
        return maintained[1] if maintained is not None else None


_DEFAULT = Pricing()


def cost(model_name: str, usage: Usage, simulated: bool = False) -> float | None:
    """Dollars for one call with no operator prices (see :meth:`Pricing.cost`)."""
    return _DEFAULT.cost(model_name, usage, simulated=simulated)
