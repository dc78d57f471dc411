"""`adapt bench monitor`: the decoding monitor on and off over a noisy simulated model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapt.cli import app
from adapt.errors import UserError
from adapt.eval.monitor_savings import noisy_spec, parse_rates

runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["bench", "monitor", *args], env={"COLUMNS": "200"})
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in out
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, out


def test_noisy_spec_sets_the_knob_once() -> None:
    assert noisy_spec("sim:textcraft?capability=1&format_error_rate=0.9&seed=7", 0.2) == \
        "sim:textcraft?capability=1&seed=7&format_error_rate=0.2"
    assert noisy_spec("sim:textcraft", 0.1) == "sim:textcraft?format_error_rate=0.1"
    with pytest.raises(UserError, match="SIMULATED"):
        noisy_spec("openai:gpt-4o-mini", 0.1)
    assert parse_rates("0, 0.5") == [0.0, 0.5]
    with pytest.raises(UserError, match=r"in \[0, 1\]"):
        parse_rates("1.5")


def test_cli_table_and_report_files(tmp_path: Path) -> None:
    code, out = cli("--limit", "6", "--format-error-rates", "0.4", "--concurrency", "2",
                    "--out", str(tmp_path))
    assert code == 0, out
    assert "nodes saved" in out
    report = json.loads((tmp_path / "report.json").read_text())
    off, on = report["rows"]
    assert (off["monitor"], on["monitor"]) == (False, True)
    assert on["violations"] > 0 and off["violations"] == 0
    assert "| adapt | 40% | on |" in (tmp_path / "report.md").read_text()
    assert len((tmp_path / "tasks.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--format-error-rates", "x"], "--format-error-rates"),
    (["--model", "openai:gpt-4o-mini"], "must be a sim:textcraft spec"),
    (["--strategies", "nope"], "nope"),
])
def test_cli_errors_exit_2_without_a_traceback(args: list[str], message: str) -> None:
    code, out = cli("--limit", "2", *args)
    assert code == 2, out
    assert message in out
