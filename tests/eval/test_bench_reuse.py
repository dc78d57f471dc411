"""``adapt bench textcraft``'s experience-library flags (issue 31): warm a library on one split,
write it, test on another with it (frozen, or learning), start from a written one; reuse never
reports a success the environment does not back."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from adapt.cli import app
from adapt.engine import RunConfig
from adapt.engine.experience import MemoryLibrary
from adapt.eval.textcraft import run_bench

SIM = "sim:textcraft?capability=1&error_rate=0.1&seed=7"
COMMON = ["bench", "textcraft", "--strategies", "adapt", "--d-max", "4", "--model", SIM,
          "--concurrency", "1"]


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*COMMON, *args])
    out = result.output + (result.stderr if result.stderr_bytes is not None else "")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, out


def test_warm_write_and_reuse(tmp_path: Path) -> None:
    library = tmp_path / "lib.json"
    code, out = cli("--split", "test", "--limit", "6", "--warm-split", "dev", "--warm-limit",
                    "12", "--library-out", str(library), "--out", str(tmp_path / "warm"))
    assert code == 0, out
    assert "library warmed on dev: 12 tasks" in out and "0 false successes" in out
    document = json.loads(library.read_text())
    assert document["format"] == "adapt-library" and document["entries"]
    assert all(e["simulated"] and e["goal_key"] for e in document["entries"])
    records = [json.loads(x) for x in (tmp_path / "warm" / "tasks.jsonl").read_text()
               .splitlines()]
    assert sum(r["reused_nodes"] for r in records) > 0

    # the written library, read back: the same runs, the same numbers (frozen: no learning)
    code, again = cli("--split", "test", "--limit", "6", "--library-in", str(library),
                      "--out", str(tmp_path / "again"))
    assert code == 0, again
    replayed = [json.loads(x) for x in (tmp_path / "again" / "tasks.jsonl").read_text()
                .splitlines()]
    assert [(r["reused_nodes"], r["usage"]) for r in replayed] == [
        (r["reused_nodes"], r["usage"]) for r in records]


def test_a_bad_library_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}')
    code, out = cli("--limit", "2", "--library-in", str(bad))
    assert code == 2 and "--library-in" in out


def test_learning_saves_calls_at_equal_success() -> None:
    base = run_bench(split="test", limit=24, strategies="adapt", d_max=4, models=SIM,
                     concurrency=1)
    library = MemoryLibrary()
    reused = run_bench(split="test", limit=24, strategies="adapt", d_max=4, models=SIM,
                       concurrency=1, base_config=RunConfig(reuse={"skills": True}),
                       library=library, learn=True)
    calls = [sum(r.usage.llm_calls for r in rep.results) for rep in (base, reused)]
    solved = [sum(r.success for r in rep.results) for rep in (base, reused)]
    assert calls[1] < calls[0] and solved[1] >= solved[0], (calls, solved)
    assert not any(r.success and r.reward < 1 for r in reused.results)
    # each cell learns in its own copy: the library passed in is left as it was
    assert library.entries == {}


def test_plans_save_planner_calls_and_a_bad_kind_is_a_usage_error(tmp_path: Path) -> None:
    code, out = cli("--split", "test", "--limit", "2", "--reuse-kinds", "recipes")
    assert code == 2 and "--reuse-kinds" in out
    # plans only, an empty library that the runs fill: later tasks take earlier plans
    code, out = cli("--split", "test", "--limit", "40", "--reuse", "--reuse-kinds", "plans",
                    "--library-learn", "--out", str(tmp_path / "plans"))
    assert code == 0, out
    assert "0 false successes" in out and "0 nodes reused" in out
    code, base = cli("--split", "test", "--limit", "40", "--out", str(tmp_path / "base"))
    assert code == 0, base
    runs = {name: [json.loads(x) for x in (tmp_path / name / "tasks.jsonl").read_text()
                   .splitlines()] for name in ("plans", "base")}
    planner = {name: sum(r["usage_by_role"].get("planner", {}).get("llm_calls", 0)
                         for r in records) for name, records in runs.items()}
    reused = sum(r["reused_plans"] for r in runs["plans"])
    assert reused > 0 and planner["plans"] <= planner["base"] - reused // 2, (reused, planner)
