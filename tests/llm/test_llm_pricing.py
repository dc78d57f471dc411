"""Prices per model, prefix matching, overrides and their settings parser."""

from __future__ import annotations

import pytest

from adapt.errors import InvalidConfig
from adapt.llm import Pricing, Usage, cost
from adapt.llm.pricing import DEFAULT_PRICES, parse_price_overrides

MILLION = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-3.5-turbo",
        "gpt-3.5-turbo-instruct",
        "o3-mini",
    ],
)
def test_common_models_are_priced(name: str) -> None:
    assert name in DEFAULT_PRICES
    price = Pricing().price(name)
    assert price is not None and price[0] > 0 and price[1] >= price[0]


@pytest.mark.parametrize(
    ("name", "known"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("gpt-3.5-turbo-instruct-0914", "gpt-3.5-turbo-instruct"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("GPT-4o-Mini", "gpt-4o-mini"),
        ("openai:gpt-4o-mini", "gpt-4o-mini"),
        ("openai-completions:gpt-3.5-turbo-instruct", "gpt-3.5-turbo-instruct"),
        ("openai:gpt-4o@https://api.openai.com/v1", "gpt-4o"),
    ],
)
def test_longest_prefix_match(name: str, known: str) -> None:
    assert Pricing().price(name) == DEFAULT_PRICES[known]


@pytest.mark.parametrize(
    "name", ["gpt-4.5-preview", "gpt-4omni", "llama3", "sim:textcraft", "", "my-model"]
)
def test_unknown_models_have_no_price(name: str) -> None:
    assert Pricing().price(name) is None
    assert cost(name, MILLION) is None


def test_cost_arithmetic() -> None:
    usage = Usage(prompt_tokens=2000, completion_tokens=500)
    expected = (2000 * 0.15 + 500 * 0.60) / 1_000_000
    assert cost("gpt-4o-mini", usage) == pytest.approx(expected)
    assert cost("gpt-4o-mini", Usage()) == 0.0


def test_simulated_is_free_even_if_unknown() -> None:
    assert cost("sim:textcraft?capability=1", MILLION, simulated=True) == 0.0
    assert cost("gpt-4o", MILLION, simulated=True) == 0.0


def test_overrides_add_and_replace() -> None:
    pricing = Pricing({"my-model": (0.1, 0.2), "gpt-4o": (1.0, 2.0)})
    assert pricing.cost("my-model", MILLION) == pytest.approx(0.3)
    assert pricing.cost("my-model-v2", MILLION) == pytest.approx(0.3)  # prefix match
    assert pricing.cost("gpt-4o-2024-08-06", MILLION) == pytest.approx(3.0)
    assert pricing.cost("gpt-4o-mini", MILLION) == pytest.approx(0.75)  # untouched
    assert Pricing().cost("my-model", MILLION) is None  # defaults unchanged
    assert "my-model" in pricing.table


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, {}),
        ("", {}),
        ("  ", {}),
        ('{"my-model": [0.1, 0.2]}', {"my-model": (0.1, 0.2)}),
        ('{"a": {"prompt": 1, "completion": 2}, "b": [0, 0]}', {"a": (1.0, 2.0), "b": (0.0, 0.0)}),
    ],
)
def test_parse_overrides(text: str | None, expected: dict[str, tuple[float, float]]) -> None:
    assert parse_price_overrides(text) == expected


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"m": [1]}', "'m'"),
        ('{"m": [1, -2]}', "non-negative"),
        ('{"m": ["a", "b"]}', "two non-negative numbers"),
        ('{"m": 3}', "[prompt, completion]"),
        ('{"m": [true, 1]}', "'m'"),
        ('{"m": {"prompt": 1}}', "'m'"),
    ],
)
def test_parse_overrides_errors(text: str, needle: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        parse_price_overrides(text)
    assert needle in str(info.value)
    assert "my-model" in str(info.value)  # the example


def test_from_setting() -> None:
    pricing = Pricing.from_setting('{"local-llama": [0, 0]}')
    assert pricing.cost("local-llama", MILLION) == 0.0


def test_a_model_run_in_process_costs_nothing() -> None:
    from adapt.llm.base import Usage
    from adapt.llm.pricing import cost

    usage = Usage(prompt_tokens=1000, completion_tokens=10)
    assert cost("local:smollm2", usage) == 0.0
    assert cost("smollm2", usage) is None  # served over HTTP: unknown unless priced
