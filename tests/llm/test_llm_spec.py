"""Model spec parsing and loading."""

from __future__ import annotations

from typing import Any

import pytest

import adapt.sim
from adapt.errors import ModelSpecError
from adapt.llm import (
    ModelSpec,
    OpenAIChatModel,
    OpenAICompletionModel,
    is_simulated,
    load_model,
    parse_model_spec,
)
from adapt.llm.base import ChatModel

URL = "http://127.0.0.1:8001/v1"


@pytest.mark.parametrize(
    ("spec", "backend", "model", "base_url"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("  openai:gpt-4o  ", "openai", "gpt-4o", None),
        ("OpenAI:gpt-4o", "openai", "gpt-4o", None),
        (f"openai:sim:textcraft?capability=1@{URL}", "openai", "sim:textcraft?capability=1", URL),
        (f"openai:llama3@{URL}", "openai", "llama3", URL),
        ("openai:m@https://api.example.com/v1", "openai", "m", "https://api.example.com/v1"),
        ("openai:claude-3@20240229", "openai", "claude-3@20240229", None),
        (f"openai:a@b@{URL}", "openai", "a@b", URL),
        (f"openai:x@http://1.2.3.4/v1@{URL}", "openai", "x@http://1.2.3.4/v1", URL),
        ("openai:m@HTTP://127.0.0.1:8001/v1", "openai", "m", "HTTP://127.0.0.1:8001/v1"),
        (
            "openai-completions:gpt-3.5-turbo-instruct",
            "openai-completions",
            "gpt-3.5-turbo-instruct",
            None,
        ),
        (
            f"openai-completions:sim:textcraft?capability=0.5&seed=3@{URL}",
            "openai-completions",
            "sim:textcraft?capability=0.5&seed=3",
            URL,
        ),
        ("sim:textcraft?capability=1", "sim", "textcraft?capability=1", None),
        ("sim:textcraft", "sim", "textcraft", None),
    ],
)
def test_parse(spec: str, backend: str, model: str, base_url: str | None) -> None:
    parsed = parse_model_spec(spec)
    assert (parsed.backend, parsed.model, parsed.base_url) == (backend, model, base_url)
    assert parse_model_spec(str(parsed)) == parsed  # round trip


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        ("", ["empty model spec", "openai:gpt-4o-mini", "sim:textcraft"]),
        ("   ", ["empty model spec"]),
        ("gpt-4o-mini", ["unknown model backend", "did you mean 'openai:gpt-4o-mini'"]),
        ("ollama:llama3", ["unknown model backend 'ollama'", "openai-completions:", "sim:"]),
        ("openai:", ["missing model name"]),
        (f"openai:@{URL}", ["missing model name"]),
        ("openai-completions:  ", ["missing model name"]),
        ("openai:gpt-4o@", ["malformed base_url"]),
        ("openai:gpt-4o@http://", ["malformed base_url"]),
        ("openai:gpt-4o@http:/127.0.0.1/v1", ["malformed base_url"]),
        ("openai:gpt-4o@http://127.0.0.1:port/v1", ["malformed base_url"]),
        ("sim:", ["missing simulator name"]),
        (f"sim:textcraft@{URL}", ["take no base_url", f"openai:sim:textcraft@{URL}"]),
    ],
)
def test_parse_errors(spec: str, needles: list[str]) -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(spec)
    for needle in needles:
        assert needle in str(info.value)


def test_model_spec_is_frozen() -> None:
    parsed = parse_model_spec("openai:gpt-4o")
    assert isinstance(parsed, ModelSpec)
    with pytest.raises(ValueError):
        parsed.model = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("spec", "simulated"),
    [
        ("sim:textcraft?capability=1", True),
        (f"openai:sim:textcraft?capability=1@{URL}", True),
        (f"openai-completions:sim:textcraft@{URL}", True),
        ("openai:gpt-4o-mini", False),
        (f"openai:llama3@{URL}", False),
    ],
)
def test_is_simulated(spec: str, simulated: bool) -> None:
    assert is_simulated(spec) is simulated


def test_load_openai_chat_with_spec_base_url() -> None:
    model = load_model(f"openai:sim:textcraft?capability=1@{URL}", timeout=5, max_retries=1)
    assert isinstance(model, OpenAIChatModel)
    assert model.model == "sim:textcraft?capability=1"
    assert model.base_url == URL
    assert model.simulated is True
    assert (model.timeout, model.max_retries) == (5.0, 1)
    assert isinstance(model, ChatModel)


def test_load_completions_with_default_base_url() -> None:
    model = load_model("openai-completions:llama3", base_url="http://localhost:8080/v1/")
    assert isinstance(model, OpenAICompletionModel)
    assert model.base_url == "http://localhost:8080/v1"
    assert model.simulated is False


def test_spec_base_url_wins_over_default() -> None:
    model = load_model(f"openai:llama3@{URL}", base_url="http://localhost:1/v1")
    assert isinstance(model, OpenAIChatModel)
    assert model.base_url == URL


def test_load_sim_delegates_to_adapt_sim(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    class Fake:
        name = "sim:textcraft?capability=1"
        simulated = True

        async def complete(self, request: Any) -> Any:
            raise NotImplementedError

    def from_spec(spec: str) -> Fake:
        seen.append(spec)
        return Fake()

    monkeypatch.setattr(adapt.sim, "from_spec", from_spec, raising=False)
    model = load_model("  sim:textcraft?capability=1 ")
    assert isinstance(model, Fake)
    assert seen == ["sim:textcraft?capability=1"]


def test_load_model_bad_spec() -> None:
    with pytest.raises(ModelSpecError):
        load_model("nonsense")


async def test_load_real_sim_model() -> None:
    model = load_model("sim:textcraft?capability=1")
    assert isinstance(model, ChatModel)
    assert model.simulated is True
    assert model.name.startswith("sim:textcraft")
