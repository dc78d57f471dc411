"""`adapt llm serve` and `local:` specs on the command line: user mistakes end in a clear message
(exit 2), never a stack trace. None of these needs the ``local`` extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapt.cli import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_serve_without_the_extra_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    code, output = run("llm", "serve", "--port", "9")
    assert code == 2
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"' in output
    assert "Traceback" not in output


def test_serve_rejects_unknown_models_and_missing_files(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setattr("adapt.llm.local.require_llama_cpp", lambda: None)
    code, output = run("llm", "serve", "--model", "gpt2", "--port", "9")
    assert code == 2 and "unknown local model 'gpt2'" in output
    code, output = run("llm", "serve", "--model", str(tmp_path / "nope.gguf"), "--port", "9")
    assert code == 2 and "does not exist" in output


def test_run_with_a_bad_local_option_is_a_usage_error() -> None:
    code, output = run("run", "--config", '{"seed": 5}', "--model", "local:smollm2?gpu=1")
    assert code == 2
    assert "unknown option 'gpu'" in output and "n_ctx" in output


def test_bench_rejects_an_unknown_prompt_set() -> None:
    code, output = run("bench", "textcraft", "--limit", "1", "--strategies", "react",
                       "--model", "sim:textcraft", "--prompts", "tiny")
    assert code == 2 and "unknown prompt set 'tiny'" in output and "small" in output
