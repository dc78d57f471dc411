"""``adapt run --verification / --grammar / --act-only / --cascade / --cascade-mode`` and
``adapt bench alfworld|sql|bash --verification``: the options reach the run (simulated models)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from typer.testing import CliRunner

from adapt.cli import app
from adapt.llm.base import ChatRequest
from tests.support.models import record_models

LIAR = "sim:textcraft?capability=4&false_success_rate=1&seed=7"
WEAK = "sim:textcraft?capability=1&seed=7"
STRONG = "sim:textcraft?capability=3&seed=7"


def run(*args: str) -> dict[str, Any]:
    out = CliRunner().invoke(app, ["run", "--config", '{"seed": 5}', *args, "--json"])
    assert out.exit_code in (0, 1), out.output
    payload: dict[str, Any] = json.loads(out.stdout)
    return payload


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for c in node["children"] for n in walk(c))]


def test_run_verification_env_refutes_a_false_claim_and_off_keeps_it() -> None:
    on = run("--strategy", "react", "--model", LIAR, "--verification", "env")
    off = run("--strategy", "react", "--model", LIAR, "--verification", "off")
    assert on["tree"]["claim"] is True and on["tree"]["termination"] == "refuted"
    assert on["result"]["claimed_success"] is False
    # off: the executor's claim decided the node; the final check still fails the task
    assert off["tree"]["termination"] == "completed"
    assert off["result"]["claimed_success"] is True
    assert on["result"]["status"] == off["result"]["status"] == "failed"


def test_run_rejects_an_unknown_verification_mode() -> None:
    out = CliRunner().invoke(app, ["run", "--verification", "sometimes"])
    assert out.exit_code == 2 and "'env' or 'off'" in out.output and "Traceback" not in out.output


@pytest.fixture
def recorded_requests(monkeypatch: pytest.MonkeyPatch) -> list[ChatRequest]:
    return record_models(monkeypatch)


def test_run_grammar_and_act_only_reach_the_requests(recorded_requests: list[ChatRequest]) -> None:
    model = "sim:textcraft?capability=4&seed=7"
    run("--strategy", "react", "--model", model)
    assert recorded_requests and all(r.grammar is None for r in recorded_requests)
    recorded_requests.clear()
    run("--strategy", "react", "--model", model, "--grammar")
    react = {r.grammar for r in recorded_requests}
    assert len(react) == 1 and None not in react and "think" in next(iter(react)).lower()
    recorded_requests.clear()
    run("--strategy", "react", "--model", model, "--grammar", "--act-only")
    act = {r.grammar for r in recorded_requests}
    assert len(act) == 1 and None not in act and act != react  # the action grammar: no thoughts


def test_run_act_only_takes_no_claim() -> None:
    """A model that writes "Task completed!" at once: ReAct takes it as its claim; act-only
    sends the line to the game and goes on until patience runs out."""
    react = run("--strategy", "react", "--model", LIAR)
    assert react["tree"]["claim"] is True and len(react["tree"]["llm_calls"]) == 1
    act = run("--strategy", "react", "--model", LIAR, "--act-only")
    assert act["tree"]["claim"] is not True and act["tree"]["termination"] == "patience"
    assert {s["kind"] for s in act["tree"]["steps"]} == {"action"}


@pytest.mark.parametrize("mode", ["before", "after"])
def test_run_cascade_uses_each_model_in_its_mode(mode: str) -> None:
    payload = run("--d-max", "3", "--cascade", f"{WEAK},{STRONG}", "--cascade-mode", mode)
    nodes = walk(payload["tree"])
    calls = Counter((c["role"], c["model"].replace("&error_rate=0", ""))
                    for n in nodes for c in n["llm_calls"])
    assert payload["result"]["status"] == "succeeded"
    assert nodes[1]["label"] == f"attempt 1: {WEAK}".replace("&seed", "&error_rate=0&seed")
    if mode == "before":  # the strong model takes the failed root before any plan
        assert calls[("executor", STRONG)] > 0 and calls[("planner", WEAK)] == 0
    else:  # decomposition with the weak model solved it: the strong one never ran
        assert calls[("executor", STRONG)] == 0 and calls[("planner", WEAK)] == 1


def test_run_cascade_needs_two_models() -> None:
    out = CliRunner().invoke(app, ["run", "--cascade", WEAK])
    assert out.exit_code == 2 and "--cascade: give two or more" in out.output
    out = CliRunner().invoke(app, ["run", "--cascade", f"{WEAK},{STRONG}",
                                   "--executor-model", STRONG])
    assert out.exit_code == 2 and "--cascade or --executor-model, not both" in out.output


@pytest.mark.parametrize("command", [["alfworld"], ["sql", "/nonexistent"],
                                     ["bash", "/nonexistent"]])
def test_bench_commands_check_verification_before_running(command: list[str]) -> None:
    out = CliRunner().invoke(app, ["bench", *command, "--verification", "sometimes"])
    assert out.exit_code == 2 and "'env' or 'off'" in out.output, out.output
    assert "Traceback" not in out.output
