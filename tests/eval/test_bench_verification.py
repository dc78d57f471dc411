"""``adapt bench textcraft`` with --verification, --grammar, --act-only, --cascade and
--cascade-mode: the report's claim vs verdict fields (SIMULATED TextCraft model, a few tasks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from adapt.cli import app
from adapt.llm.base import ChatRequest

# claims "Task completed!" on 30% of its actions whether or not the goal is met
LIAR = "sim:textcraft?capability=1&false_success_rate=0.3&seed=7"
WEAK = "sim:textcraft?capability=1&error_rate=0.1&seed=7"
STRONG = "sim:textcraft?capability=3&error_rate=0.1&seed=7"


def bench(out: Path, *args: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The report's entries and the task records of one ``adapt bench textcraft`` run."""
    result = CliRunner().invoke(app, ["bench", "textcraft", "--split", "test", "--d-max", "3",
                                      "--concurrency", "2", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    records = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    return report["entries"], records


def test_verification_off_lets_false_claims_through_and_env_removes_them(tmp_path: Path) -> None:
    (off,), off_records = bench(tmp_path / "off", "--limit", "8", "--strategies", "adapt",
                                "--model", LIAR, "--verification", "off")
    (on,), on_records = bench(tmp_path / "env", "--limit", "8", "--strategies", "adapt",
                              "--model", LIAR, "--verification", "env")
    # off: the trees claim more than the games gave; env: every claim is a real success
    assert off["self_assessed_success_rate"] > off["success_rate"]
    assert on["self_assessed_success_rate"] == on["success_rate"] > off["success_rate"]
    assert on["checkable_subgoal_share"] == 1.0  # the simulator plans in the checkable forms
    assert off["checkable_subgoal_share"] is None  # off: no sub-goal was checked
    assert [r["claimed_success"] for r in off_records].count(True) == round(
        8 * off["self_assessed_success_rate"])
    checks = [c for r in on_records for c in r["node_checks"]]
    assert checks and {"id", "depth", "goal", "claim", "verdict", "evidence",
                       "termination"} <= checks[0].keys()
    assert "refuted" in {c["termination"] for c in checks}  # false claims, caught
    assert all(c["verdict"] is None for r in off_records for c in r["node_checks"]
               if c["depth"] > 1)
    assert all(r["checkable_subgoals"] == r["checked_subgoals"] > 0 for r in on_records
               if r["nodes"] > 1)


def test_act_only_takes_no_claims(tmp_path: Path) -> None:
    liar = "sim:textcraft?capability=4&false_success_rate=1&seed=7"
    _, react = bench(tmp_path / "react", "--limit", "3", "--strategies", "react",
                     "--model", liar)
    _, act = bench(tmp_path / "act", "--limit", "3", "--strategies", "react", "--model", liar,
                   "--act-only")
    assert all(r["node_checks"][0]["claim"] is True for r in react)
    assert all(c["claim"] is not True for r in act for c in r["node_checks"])
    assert {c["termination"] for r in act for c in r["node_checks"]} <= {"patience", "max_steps"}


def test_grammar_reaches_every_executor_and_planner_request(
        tmp_path: Path, recorded_requests: list[ChatRequest]) -> None:
    bench(tmp_path / "plain", "--limit", "2", "--strategies", "adapt", "--model", WEAK)
    assert recorded_requests and all(r.grammar is None for r in recorded_requests)
    recorded_requests.clear()
    bench(tmp_path / "grammar", "--limit", "2", "--strategies", "adapt", "--model", WEAK,
          "--grammar")
    roles = {r.role for r in recorded_requests}
    assert roles == {"executor", "planner"}
    assert all(r.grammar for r in recorded_requests)
    plan = {r.grammar for r in recorded_requests if r.role == "planner"}
    assert all("Execution Order" in g for g in plan if g)


def test_cascade_reports_executor_calls_by_model(tmp_path: Path) -> None:
    entries, records = bench(tmp_path / "cascade", "--limit", "4", "--strategies", "adapt",
                             "--planner-model", WEAK, "--model", WEAK,
                             "--cascade", f"{WEAK},{STRONG}", "--cascade-mode", "before")
    weak, cascade = entries
    assert cascade["model"].startswith("cascade ")
    by_model = cascade["executor_calls_by_model"]
    assert len(by_model) == 2 and all(n > 0 for n in by_model.values())
    assert sum(by_model.values()) == cascade["executor_calls"]
    assert len(weak["executor_calls_by_model"]) == 1
    assert cascade["success_rate"] >= weak["success_rate"]
    assert any(len(r["executor_calls_by_model"]) == 2 for r in records)
    # after: the strong model runs only where the weak one's decomposition could not help
    (after,), _ = bench(tmp_path / "after", "--limit", "4", "--strategies", "adapt",
                        "--planner-model", WEAK, "--cascade", f"{WEAK},{STRONG}",
                        "--cascade-mode", "after")
    assert sum(after["executor_calls_by_model"].values()) == after["executor_calls"]
    assert after["planner_calls"] > cascade["planner_calls"]
