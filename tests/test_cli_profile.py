"""``adapt run --profile paper`` takes the paper's d_max for the environment when --d-max is not
given (TextCraft: 4); --d-max still wins, and the default profile keeps 3 (simulated model)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from adapt.cli import app


def run(*args: str) -> dict[str, Any]:
    out = CliRunner().invoke(app, ["run", "--config", '{"seed": 5}', "--model",
                                   "sim:textcraft?capability=4", *args, "--json"])
    assert out.exit_code in (0, 1), out.output
    payload: dict[str, Any] = json.loads(out.stdout)
    return payload


def test_paper_profile_takes_the_papers_d_max_unless_given() -> None:
    assert run("--profile", "paper")["result"]["d_max"] == 4
    assert run("--profile", "paper", "--d-max", "2")["result"]["d_max"] == 2
    assert run()["result"]["d_max"] == 3
