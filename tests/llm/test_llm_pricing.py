"""Prices: the operator's overrides first (typed, prefix matching), then genai-prices'
OpenAI prices; cached prompt tokens charged as the provider charges them."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from adapt.llm import Pricing, Usage, cost
from adapt.llm.pricing import ModelPrice
from adapt.settings import Settings

MILLION = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)


@pytest.mark.parametrize(
    ("name", "dollars"),
    [
        ("gpt-4o", 2.50 + 10.00),
        ("gpt-4o-mini", 0.15 + 0.60),
        ("gpt-4.1", 2.00 + 8.00),
        ("gpt-4.1-nano", 0.10 + 0.40),
        ("gpt-3.5-turbo-instruct", 1.50 + 2.00),
        ("o3-mini", 1.10 + 4.40),
        # dated variants, case, a backend prefix and a base URL
        ("gpt-4o-mini-2024-07-18", 0.75),
        ("gpt-4o-2024-08-06", 12.50),
        ("GPT-4o-Mini", 0.75),
        ("openai:gpt-4o-mini", 0.75),
        ("openai-completions:gpt-3.5-turbo-instruct", 3.50),
        ("openai:gpt-4o@https://api.openai.com/v1", 12.50),
    ],
)
def test_openai_models_are_priced_from_genai_prices(name: str, dollars: float) -> None:
    assert cost(name, MILLION) == pytest.approx(dollars)


def test_models_the_old_table_did_not_know_are_priced() -> None:
    assert cost("gpt-4.5-preview", MILLION) is not None  # 14 models were all it knew
    assert cost("gpt-5-mini", MILLION) is not None


@pytest.mark.parametrize("name", ["gpt-4omni", "llama3", "sim:textcraft", "", "my-model",
                                  "claude-3-5-sonnet"])
def test_unknown_models_have_no_price(name: str) -> None:
    assert cost(name, MILLION) is None


def test_cached_prompt_tokens_cost_the_cached_price() -> None:
    # gpt-4o-mini: $0.15 per million input tokens, $0.075 per million cached ones
    half = Usage(prompt_tokens=1_000_000, cached_tokens=500_000)
    assert cost("gpt-4o-mini", half) == pytest.approx(0.5 * 0.15 + 0.5 * 0.075)
    assert cost("gpt-4o-mini", Usage(prompt_tokens=1_000_000)) == pytest.approx(0.15)
    assert cost("gpt-4o-mini", Usage()) == 0.0


def test_simulated_and_in_process_models_are_free() -> None:
    assert cost("sim:textcraft?capability=1", MILLION, simulated=True) == 0.0
    assert cost("gpt-4o", MILLION, simulated=True) == 0.0
    assert cost("local:smollm2", MILLION) == 0.0
    assert cost("smollm2", MILLION) is None  # served over HTTP: unknown unless priced


def test_overrides_add_and_replace_with_prefix_matching() -> None:
    pricing = Pricing({"my-model": ModelPrice(prompt=0.1, completion=0.2),
                       "gpt-4o": ModelPrice(prompt=1.0, completion=2.0)})
    assert pricing.cost("my-model", MILLION) == pytest.approx(0.3)
    assert pricing.cost("my-model-v2", MILLION) == pytest.approx(0.3)  # prefix match
    assert pricing.cost("gpt-4o-2024-08-06", MILLION) == pytest.approx(3.0)
    assert pricing.cost("gpt-4o-mini", MILLION) == pytest.approx(0.75)  # not a prefix
    assert Pricing().cost("my-model", MILLION) is None
    assert set(pricing.overrides) == {"my-model", "gpt-4o"}


def test_an_override_may_price_cached_tokens() -> None:
    usage = Usage(prompt_tokens=1_000_000, cached_tokens=1_000_000, completion_tokens=0)
    assert Pricing({"m": ModelPrice(prompt=1, completion=2)}).cost("m", usage) == 1.0
    priced = Pricing({"m": ModelPrice(prompt=1, completion=2, cached_prompt=0.25)})
    assert priced.cost("m", usage) == 0.25


def test_the_setting_is_typed_and_reads_the_old_list_form(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAPT_PRICING", '{"local-llama": [0, 0], "m": [1, 2, 0.5], '
                       '"n": {"prompt": 1, "completion": 2}}')
    prices = Settings().pricing
    assert prices == {"local-llama": ModelPrice(prompt=0, completion=0),
                      "m": ModelPrice(prompt=1, completion=2, cached_prompt=0.5),
                      "n": ModelPrice(prompt=1, completion=2)}
    assert Pricing(prices).cost("local-llama", MILLION) == 0.0
    monkeypatch.setenv("ADAPT_PRICING", '{"m": [1, -2]}')
    with pytest.raises(ValidationError, match=r"pricing\.m"):
        Settings()


def test_a_price_lookup_is_cheap() -> None:
    cost("gpt-4o-mini", MILLION)  # the price data is loaded once
    start = time.perf_counter()
    for _ in range(200):
        cost("gpt-4o-mini-2024-07-18", MILLION)
    assert time.perf_counter() - start < 2.0  # bounded, not a benchmark: 10 ms a call at most
