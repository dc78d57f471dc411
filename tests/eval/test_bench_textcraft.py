"""`adapt bench textcraft` and `run_bench` end to end with the simulated model."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapt.cli import app
from adapt.engine import strategies as registry
from adapt.engine.strategies.core import react_strategy
from adapt.engine.strategies.registry import STRATEGIES
from adapt.errors import UserError
from adapt.eval.report import BenchReport, TaskRecord, to_markdown
from adapt.eval.textcraft import (
    parse_d_max,
    parse_strategies,
    read_task_ids,
    run_bench,
    select_tasks,
)

SIM = "sim:textcraft?capability=1&error_rate=0.1&seed=7"
REQUIRED = {"strategy", "model", "d_max", "tasks", "success_rate", "self_assessed_success_rate",
            "by_depth", "llm_calls", "prompt_tokens", "completion_tokens", "cost_usd",
            "wall_seconds"}
runner = CliRunner()


@pytest.fixture(scope="module")
def report() -> BenchReport:
    return run_bench(split="test", limit=12, strategies="adapt,react", d_max="1,4", models=SIM,
                     seed=3, concurrency=4)


def test_select_tasks_is_stratified_and_fixed() -> None:
    chosen = select_tasks("test", limit=12)
    assert Counter(t.depth for t in chosen) == {2: 4, 3: 4, 4: 4}
    assert chosen == select_tasks("test", limit=12)
    assert {t.id for t in chosen} <= {t.id for t in select_tasks("test")}
    assert len(select_tasks("test", limit=1000)) == len(select_tasks("test"))
    assert {t.depth for t in select_tasks("test", depth=3, limit=5)} == {3}


def test_json_entries_have_the_fixed_keys(report: BenchReport) -> None:
    data = json.loads(report.to_json())
    assert data["simulated"] is True and data["task_count"] == 12
    assert data["tasks_by_depth"] == {"2": 4, "3": 4, "4": 4}
    assert "results" not in data
    entries = data["entries"]
    assert [(e["strategy"], e["d_max"]) for e in entries] == [
        ("adapt", 1), ("adapt", 4), ("react", 1), ("react", 4)]
    for e in entries:
        assert set(e) >= REQUIRED, REQUIRED - set(e)
        assert e["model"] == SIM and e["simulated"] is True and e["tasks"] == 12
        assert e["cost_usd"] == 0.0  # simulated calls are free
        assert e["llm_calls"] == e["executor_calls"] + e["planner_calls"]
        assert e["llm_calls"] > 0 and e["prompt_tokens"] > 0 and e["completion_tokens"] > 0


def test_by_depth_structure(report: BenchReport) -> None:
    for e in report.entries:
        assert set(e.by_depth) == {"2", "3", "4"}
        assert sum(s.tasks for s in e.by_depth.values()) == e.tasks
        assert sum(s.successes for s in e.by_depth.values()) == e.successes
        for depth, s in e.by_depth.items():
            assert s.success_rate == s.successes / s.tasks
            assert e.k_max_by_depth[depth] == s.k_max
            assert (s.k_max is None) == (s.successes == 0)
    adapt4 = report.entries[1]
    assert adapt4.success_rate > 0 and adapt4.k_max is not None and adapt4.k_max > 1
    assert all(r.max_depth == 1 for r in report.results if r.strategy == "react")


def test_same_seed_same_numbers_whatever_the_concurrency(report: BenchReport) -> None:
    again = run_bench(split="test", limit=12, strategies="adapt,react", d_max="1,4",
                      models=SIM, seed=3, concurrency=1)
    assert again.comparable() == {**report.comparable(), "concurrency": 1}


def test_results_are_sorted_and_each_reported(report: BenchReport) -> None:
    seen: list[TaskRecord] = []
    out = run_bench(limit=6, strategies=["react"], d_max=2, models=SIM, concurrency=6,
                    on_result=seen.append)
    assert len(seen) == len(out.results) == 6
    assert sorted(seen, key=lambda r: (r.depth, r.item)) == out.results
    keys = [(r.strategy, r.d_max, r.depth, r.item) for r in report.results]
    order = {"adapt": 0, "react": 1}
    assert keys == sorted(keys, key=lambda k: (order[k[0]], k[1], k[2], k[3]))


def test_a_newly_registered_strategy_just_works() -> None:
    registry.register("bench_test_alias")(react_strategy)
    try:
        out = run_bench(limit=3, strategies="bench_test_alias", d_max=1, models=SIM)
    finally:
        STRATEGIES.unregister("bench_test_alias")
    assert [e.strategy for e in out.entries] == ["bench_test_alias"]
    assert out.entries[0].tasks == 3


def test_argument_errors_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"available: .*adapt.*react"):
        parse_strategies("adapt,nope")
    for bad in ("", "1,x", "0", "9", "1,,2"):
        with pytest.raises(UserError, match="d-max"):
            parse_d_max(bad)
    assert parse_d_max("4,1,2,2") == [1, 2, 4]
    with pytest.raises(UserError, match="unknown split"):
        select_tasks("train")
    with pytest.raises(UserError, match="no TextCraft tasks"):
        select_tasks("dev", depth=3)


def test_markdown_table(report: BenchReport) -> None:
    md = to_markdown(report)
    lines = md.splitlines()
    header = next(i for i, line in enumerate(lines)
                  if line.startswith("| strategy | profile | model |"))
    assert lines[header + 1].startswith("| :--- | :--- | :--- | ---: |")
    rows = lines[header + 2 : header + 6]
    assert [r.split(" | ")[0] for r in rows] == ["| adapt", "| adapt", "| react", "| react"]
    assert all(r.split(" | ")[1] == "default" for r in rows)  # every row names its profile
    assert all("(SIMULATED)" in r for r in rows)
    assert all(r.count("|") == lines[header].count("|") for r in rows)
    assert "depth 4: success · k_max" in lines[header]


# -- the CLI ------------------------------------------------------------------------------------
@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("OPENAI_API_KEY", "ADAPT_OPENAI_API_KEY", "ADAPT_DEFAULT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    yield


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["bench", "textcraft", *args])
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in out
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, out


def test_cli_writes_the_report_files(tmp_path: Path) -> None:
    code, out = cli("--split", "test", "--limit", "12", "--strategies", "adapt,react",
                    "--d-max", "1,2", "--model", SIM, "--seed", "3", "--out", str(tmp_path))
    assert code == 0, out
    assert "TextCraft benchmark" in out and "SIMULATED" in out
    data = json.loads((tmp_path / "report.json").read_text())
    assert len(data["entries"]) == 4 and data["seed"] == 3 and data["split"] == "test"
    assert "| strategy | profile | model |" in (tmp_path / "report.md").read_text()
    lines = [json.loads(x) for x in (tmp_path / "tasks.jsonl").read_text().splitlines()]
    assert len(lines) == 12 * 2 * 2
    assert {"id", "depth", "strategy", "d_max", "status", "reward", "success", "max_depth",
            "usage"} <= set(lines[0])
    # the library gives the same numbers as the CLI
    lib = run_bench(limit=12, strategies="adapt,react", d_max="1,2", models=SIM, seed=3)
    strip = BenchReport.model_validate(data).comparable()
    assert strip["entries"] == lib.comparable()["entries"]


def test_cli_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    code, out = cli("--limit", "6", "--strategies", "adapt,react", "--d-max", "1,2,3",
                    "--model", SIM, "--out", str(tmp_path), "--plot")
    assert code == 0, out
    for name in ("success_vs_dmax.png", "success_by_depth.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_default_model_is_the_labelled_simulator(no_key: None) -> None:
    code, out = cli("--limit", "3", "--strategies", "react", "--d-max", "1")
    assert code == 0, out
    assert "SIMULATED" in out


REPO_LIST = Path(__file__).resolve().parents[2] / "docs" / "data" / "textcraft-test-24.txt"


def test_the_repo_task_list_is_the_stratified_24_interleaved_by_depth() -> None:
    listed = read_task_ids(REPO_LIST)
    assert sorted(t.id for t in listed) == sorted(t.id for t in select_tasks("test", limit=24))
    # every prefix of 3k tasks holds k of each depth: a run stopped early stays stratified
    for k in range(1, 9):
        assert Counter(t.depth for t in listed[:3 * k]) == {2: k, 3: k, 4: k}
    assert read_task_ids(REPO_LIST, limit=6) == listed[:6]


def test_cli_task_file_runs_the_listed_tasks_in_order_and_writes_each_as_it_ends(
        tmp_path: Path) -> None:
    listing = tmp_path / "ids.txt"
    listing.write_text("# a comment\nladder  # depth 2\n\ntextcraft/black_bed\ncyan_banner\n")
    out = tmp_path / "out"
    code, text = cli("--tasks", str(listing), "--limit", "2", "--strategies", "adapt",
                     "--d-max", "2", "--model", SIM, "--concurrency", "1", "--out", str(out))
    assert code == 0, text
    partial = [json.loads(x) for x in (out / "tasks.partial.jsonl").read_text().splitlines()]
    assert [r["id"] for r in partial] == ["textcraft/ladder", "textcraft/black_bed"]
    final = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    assert final == partial
    assert json.loads((out / "report.json").read_text())["split"] == "custom"


@pytest.mark.parametrize(("content", "message"), [
    ("ladder\nnot_an_item\n", "ids.txt:2: unknown TextCraft task 'not_an_item'"),
    ("ladder\nladder\n", "listed twice"),
    ("# nothing\n", "names no tasks"),
])
def test_cli_task_file_errors(tmp_path: Path, content: str, message: str) -> None:
    listing = tmp_path / "ids.txt"
    listing.write_text(content)
    code, out = cli("--tasks", str(listing), "--model", SIM)
    assert code == 2, out
    assert message in " ".join(out.split())


@pytest.mark.parametrize(("args", "message"), [
    (["--tasks", "/nonexistent/ids.txt"], "cannot read"),
    (["--strategies", "adapt,bogus"], "available"),
    (["--d-max", "1,two"], "--d-max"),
    (["--d-max", "0"], "out of range"),
    (["--split", "train"], "unknown split"),
    (["--split", "dev", "--depth", "4"], "no TextCraft tasks"),
    (["--plot"], "--out"),
    (["--model", "nobackend"], "unknown model backend"),
])
def test_cli_errors_exit_2_without_a_traceback(args: list[str], message: str) -> None:
    code, out = cli("--limit", "2", *args)
    assert code == 2, out
    assert message in out
