"""The offline bench comparing the react and stateact executors under ADaPT (simulated model)."""

from __future__ import annotations

import json

import pytest

from adapt.errors import UserError
from adapt.eval.textcraft import ExecutorBenchReport, parse_executor_kinds, run_bench

SIM = "sim:textcraft?capability=1&error_rate=0.1&seed=7"


@pytest.fixture(scope="module")
def report() -> ExecutorBenchReport:
    return run_bench(split="test", limit=6, strategies="adapt", d_max=4, models=SIM, seed=0,
                     concurrency=4, executor_kind="react,stateact")


def test_both_executors_run_end_to_end_side_by_side(report: ExecutorBenchReport) -> None:
    data = json.loads(report.to_json())
    assert data["executors"] == ["react", "stateact"]
    assert [(e["strategy"], e["d_max"], e["executor"]) for e in data["entries"]] == [
        ("adapt", 4, "react"), ("adapt", 4, "stateact")]
    react, stateact = report.entries
    for e in (react, stateact):
        assert e.tasks == 6 and e.errors == 0 and e.success_rate > 0
        assert e.executor_calls > 0 and e.planner_calls > 0
    # a StateAct step is several lines: more completion tokens per executor call
    assert (stateact.completion_tokens / stateact.executor_calls
            > react.completion_tokens / react.executor_calls)


def test_records_name_their_executor(report: ExecutorBenchReport) -> None:
    kinds = [r.executor for r in report.results]
    assert kinds == ["react"] * 6 + ["stateact"] * 6
    assert [r.id for r in report.results[:6]] == [r.id for r in report.results[6:]]
    assert all(json.loads(r.model_dump_json())["executor"] == r.executor
               for r in report.results)
    assert "executor" in report.comparable()["results"][0]
    assert report.comparable()["entries"][1]["executor"] == "stateact"


def test_default_is_react_and_a_single_kind_works() -> None:
    default = run_bench(limit=2, strategies="react", d_max=1, models=SIM)
    assert default.executors == ["react"] and default.entries[0].executor == "react"
    plain = json.loads(default.to_json())  # as before executors were selectable
    assert "executors" not in plain and "executor" not in plain["entries"][0]
    single = run_bench(limit=2, strategies="react", d_max=1, models=SIM,
                       executor_kind=["stateact"])
    assert [e.executor for e in single.entries] == ["stateact"]
    assert all(r.executor == "stateact" for r in single.results)


def test_parse_executor_kinds() -> None:
    assert parse_executor_kinds("react, stateact,react") == ["react", "stateact"]
    with pytest.raises(UserError, match="unknown executor kind 'nope'; known: react, stateact"):
        parse_executor_kinds("react,nope")
    with pytest.raises(UserError, match="--executors"):
        parse_executor_kinds(",")
    with pytest.raises(UserError, match="unknown executor kind"):
        run_bench(limit=1, models=SIM, executor_kind="bogus")
