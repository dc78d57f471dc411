"""The InterCode-Bash bench (`adapt bench bash`): report numbers with scripted models in the real
sandbox, the live error count under both observation formats, task selection, and the CLI.

The sandbox tests reuse the InterCode-Bash fixtures (data dir, prepared file systems) and are
skipped, as those tests are, without bubblewrap, root or the data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adapt.cli import app
from adapt.envs.intercode_bash import InterCodeBash, Task
from adapt.errors import UserError
from adapt.eval.bash import (
    ANCHOR,
    DESIGNS,
    REAL_MODEL_REQUIRED,
    bash_to_markdown,
    parse_designs,
    run_bash_bench,
    select_bash_tasks,
    write_bash_report,
)
from adapt.eval.grid import BenchModel
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from tests.support.models import as_turn

BAD = "ls /no/such/dir"
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "intercode-bash"


def command(task: Task) -> str:
    return task.gold if isinstance(task.gold, str) else ";".join(task.gold)


def gold_model(chosen: list[Task], *, bad_first: bool = False,
               invalid_first: bool = False) -> FunctionModel:
    """ReAct replies: (optionally a failing command or an invalid action, then) the gold
    command, then submit."""
    golds = {t.question: command(t) for t in chosen}

    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        question = max((q for q in golds if q in prompt), key=prompt.rindex)
        after = prompt[prompt.rindex(question):]
        if bad_first and f"execute[{BAD}]" not in after:
            return as_turn(prompt, f"execute[{BAD}]")
        if invalid_first and "Invalid action" not in after:
            return "ls -l /testbed"  # a bare command: not an action of this environment
        if f"execute[{golds[question]}]" not in after:
            return as_turn(prompt, f"execute[{golds[question]}]")
        return as_turn(prompt, "submit")

    return FunctionModel(reply, name="gold")


@pytest.fixture
def make_env(bash_data: Path, bash_cache: Path, bash_layers: Any) -> Any:
    return lambda: InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10)


@pytest.fixture
def chosen(bash_data: Path) -> list[Task]:
    """One task per file system (the first of each; their gold commands score 1.0)."""
    return select_bash_tasks(bash_data, "all", limit=4)


def test_gold_answers_score_one_in_every_file_system(chosen: list[Task], make_env: Any,
                                                     bash_data: Path, tmp_path: Path) -> None:
    model = gold_model(chosen)
    report = run_bash_bench(bash_data, models=BenchModel(model, model), designs="react",
                            task_list=chosen, concurrency=2, env_factory=make_env)
    (entry,) = report.entries
    assert entry.design == "react" and entry.strategy == "react" and entry.executor == "react"
    assert entry.tasks == 4 and entry.success_rate == 1.0 and entry.mean_reward == 1.0
    assert set(entry.by_fs) == {"fs1", "fs2", "fs3", "fs4"}
    for stats in entry.by_fs.values():
        assert stats.success_rate == 1.0 and stats.mean_turns == 2.0 and stats.error_rate == 0.0
    assert report.tasks_by_fs == {"fs1": 1, "fs2": 1, "fs3": 1, "fs4": 1}
    assert report.task_set == "custom" and report.simulated  # a scripted model
    assert all(r.turns == 2 and r.executes == 1 and r.solved for r in report.results)
    md = bash_to_markdown(report)
    assert "| react | default | fs1 | 100.0% (1/1)" in md and "| react | default | all |" in md
    assert ANCHOR in md and "SIMULATED" in md
    paths = write_bash_report(report, tmp_path)
    data = json.loads(paths[0].read_text())
    assert data["environment"] == "intercode_bash" and data["simulated"] is True
    assert data["entries"][0]["by_fs"]["fs2"]["success_rate"] == 1.0
    assert [json.loads(line)["fs"] for line in paths[2].read_text().splitlines()] == [1, 2, 3, 4]


def test_the_report_names_the_task_set_of_its_selection(bash_data: Path, make_env: Any) -> None:
    """The CLI passes its own selection (made first, to size the progress bar): the report
    names it by the task set, not 'custom'."""
    picked = select_bash_tasks(bash_data, "fs1", limit=1)
    model = gold_model(picked)
    report = run_bash_bench(bash_data, models=BenchModel(model, model), designs="react",
                            task_set="fs1", limit=1, task_list=picked, env_factory=make_env)
    assert report.task_set == "fs1" and report.task_count == 1


def test_error_rate_counts_failed_commands_in_both_formats(chosen: list[Task], make_env: Any,
                                                           bash_data: Path) -> None:
    """A failing command, then the gold one: half the executes failed, also under profile
    paper, whose observations (InterCode's) show no exit status."""
    two = chosen[:2]
    model = gold_model(two, bad_first=True)
    report = run_bash_bench(bash_data, models=BenchModel(model, model), designs=["react"],
                            task_list=two, env_factory=make_env, profiles="default,paper")
    assert [e.profile for e in report.entries] == ["default", "paper"]
    for entry in report.entries:
        assert entry.executes == 4 and entry.execute_errors == 2 and entry.error_rate == 0.5
        assert entry.mean_turns == 3.0 and entry.success_rate == 1.0
    assert [r.profile for r in report.results] == ["default"] * 2 + ["paper"] * 2


def test_invalid_actions_count_as_failed_commands(chosen: list[Task], make_env: Any,
                                                  bash_data: Path) -> None:
    """A bare command (not execute[...]) is refused by the environment: it counts in the error
    rate next to the executes, so a model that never writes a valid action does not show 0/0."""
    one = chosen[:1]
    model = gold_model(one, invalid_first=True)
    report = run_bash_bench(bash_data, models=BenchModel(model, model), designs="react",
                            task_list=one, env_factory=make_env)
    (entry,) = report.entries
    assert entry.executes == 1 and entry.execute_errors == 0 and entry.invalid_actions == 1
    assert entry.error_rate == 0.5 and entry.mean_turns == 3.0
    assert report.results[0].invalid_actions == 1
    assert "50.0% (1/2)" in bash_to_markdown(report)


def test_designs_and_selection() -> None:
    assert parse_designs("adapt, stateact,adapt") == ["adapt", "stateact"]
    assert DESIGNS["stateact"] == ("react", "stateact")
    assert DESIGNS["stateflow"][0] == "stateflow"
    with pytest.raises(UserError, match="unknown design 'reflexion'"):
        parse_designs("react,reflexion")
    if not DATA.is_dir():
        pytest.skip(f"no InterCode-Bash data at {DATA}")
    picked = select_bash_tasks(DATA, "all", limit=6)
    assert [t.fs for t in picked] == [1, 1, 2, 2, 3, 4]
    assert len(select_bash_tasks(DATA, "fs4")) == 27 and len(select_bash_tasks(DATA)) == 200
    with pytest.raises(UserError, match="unknown task set 'fs9'"):
        select_bash_tasks(DATA, "fs9")


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ADAPT_OPENAI_API_KEY", "ADAPT_DEFAULT_MODEL"):
        monkeypatch.delenv(var, raising=False)


def test_cli_needs_a_real_model(no_key: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "bash", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "the Bash bench needs a real OpenAI-compatible endpoint" in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    sim = CliRunner().invoke(app, ["bench", "bash", str(tmp_path), "--model", "sim:textcraft"])
    assert sim.exit_code == 2 and "no simulated Bash model" in sim.output
    assert REAL_MODEL_REQUIRED.startswith("the Bash bench needs")


def test_cli_bad_options_exit_2(tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["bench", "bash", str(tmp_path), "--designs", "react,nope",
                                   "--model", "openai:gpt-4o-mini"])
    assert bad.exit_code == 2 and "unknown design 'nope'" in bad.output
    missing = CliRunner().invoke(app, ["bench", "bash", str(tmp_path), "--model",
                                       "openai:gpt-4o-mini"])
    assert missing.exit_code == 2 and "no task file" in missing.output
    assert "Traceback" not in missing.output
