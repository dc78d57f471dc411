"""The InterCode-SQL bench: report numbers with scripted models on the real MariaDB, and the CLI.

The MariaDB-backed tests reuse the InterCode-SQL test fixtures (data dir, loaded server) and
are skipped, as those tests are, when the data or the server is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adapt.cli import app
from adapt.envs.intercode_sql import InterCodeSQL, Task, tasks
from adapt.errors import UserError
from adapt.eval.sql import (
    DESIGNS,
    REAL_MODEL_REQUIRED,
    parse_designs,
    parse_hardness,
    run_sql_bench,
    sql_to_markdown,
    write_sql_report,
)
from adapt.eval.textcraft import BenchModel
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from tests.support.models import as_turn

BAD = "SELECT no_such_column FROM no_such_table"
PER_LEVEL = 2


def env_factory(server: Any) -> InterCodeSQL:
    return InterCodeSQL(host=server.host, port=server.port, user=server.agent_user,
                        password=server.agent_password, statement_timeout=5.0)


@pytest.fixture(scope="module")
def solvable(data_dir: Path, server: Any) -> list[Task]:
    """The first tasks of each level whose gold query earns reward 1.0 on this server."""
    picked: list[Task] = []
    env = env_factory(server)
    try:
        for level in ("easy", "medium", "hard", "extra"):
            found = 0
            for task in tasks(data_dir, hardness=level):
                if found == PER_LEVEL:
                    break
                env.reset(**task.config)
                env.step(f"execute[{task.gold}]")
                if env.step("submit").reward == 1.0:
                    picked.append(task)
                    found += 1
    finally:
        env.close()
    return picked


def gold_model(golds: dict[str, str], *, bad_first: bool = False) -> FunctionModel:
    """ReAct replies: (optionally a failing query, then) the gold query, then submit."""

    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        # the default prompts say "Task: <question>", InterCode's (profile paper) "Question:"
        asked = [(f"{key}: {q}", q) for q in golds for key in ("Task", "Question")
                 if f"{key}: {q}" in prompt]
        line, question = max(asked, key=lambda a: prompt.rindex(a[0]))
        after = prompt[prompt.rindex(line):]
        if bad_first and f"execute[{BAD}]" not in after:
            return as_turn(prompt, f"execute[{BAD}]")
        if f"execute[{golds[question]}]" not in after:
            return as_turn(prompt, f"execute[{golds[question]}]")
        return as_turn(prompt, "submit")

    return FunctionModel(reply, name="gold")


def test_react_solves_every_level(solvable: list[Task], server: Any, data_dir: Path,
                                  tmp_path: Path) -> None:
    golds = {t.question: t.gold for t in solvable}
    model = gold_model(golds)
    report = run_sql_bench(data_dir, models=BenchModel(model, model), designs="react",
                           task_list=solvable, concurrency=3,
                           env_factory=lambda: env_factory(server))
    (entry,) = report.entries
    assert entry.design == "react" and entry.strategy == "react" and entry.executor == "react"
    assert entry.tasks == len(solvable) and entry.success_rate == 1.0
    assert set(entry.by_hardness) == {t.hardness for t in solvable}
    for stats in entry.by_hardness.values():
        assert stats.success_rate == 1.0 and stats.mean_reward == 1.0
        assert stats.mean_turns == 2.0 and stats.error_rate == 0.0
    assert entry.llm_calls == 2 * len(solvable) and entry.prompt_tokens > 0
    assert entry.cost_usd == 0.0
    assert report.tasks_by_hardness == {h: PER_LEVEL for h in entry.by_hardness}
    assert all(r.turns == 2 and r.executes == 1 for r in report.results)
    md = sql_to_markdown(report)
    assert "| react | default | easy | 100.0%" in md and "| react | default | all | 100.0%" in md
    paths = write_sql_report(report, tmp_path)
    data = json.loads(paths[0].read_text())
    assert data["entries"][0]["by_hardness"]["easy"]["success_rate"] == 1.0
    assert len(paths[2].read_text().splitlines()) == len(solvable)


def test_error_rate_counts_failed_executes(solvable: list[Task], server: Any,
                                          data_dir: Path) -> None:
    chosen = solvable[:3]
    golds = {t.question: t.gold for t in chosen}
    model = gold_model(golds, bad_first=True)
    report = run_sql_bench(data_dir, models=BenchModel(model, model), designs=["react"],
                           task_list=chosen, env_factory=lambda: env_factory(server))
    (entry,) = report.entries
    # each task: one failing execute, the gold execute, submit
    assert entry.executes == 2 * len(chosen) and entry.execute_errors == len(chosen)
    assert entry.error_rate == 0.5 and entry.mean_turns == 3.0 and entry.success_rate == 1.0


def test_designs_parse_and_map() -> None:
    assert parse_designs("react, plan_and_execute,react") == ["react", "plan_and_execute"]
    assert DESIGNS["stateflow"][0] == "stateflow"
    assert DESIGNS["plan_and_execute"] == ("plan_and_execute", "react")
    with pytest.raises(UserError, match="unknown design 'adapt'"):
        parse_designs("react,adapt")
    assert parse_hardness("hard,easy") == ["easy", "hard"]
    with pytest.raises(UserError):
        parse_hardness("trivial")


def test_library_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="real OpenAI-compatible endpoint"):
        run_sql_bench(tmp_path, models=[])


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ADAPT_OPENAI_API_KEY", "ADAPT_DEFAULT_MODEL"):
        monkeypatch.delenv(var, raising=False)


def test_cli_without_a_model_exits_2(no_key: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "sql", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "real OpenAI-compatible endpoint" in result.output
    assert "adapt bench sql" in result.output and "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    sim = CliRunner().invoke(app, ["bench", "sql", str(tmp_path), "--model", "sim:textcraft"])
    assert sim.exit_code == 2 and "real OpenAI-compatible endpoint" in sim.output
    assert REAL_MODEL_REQUIRED.startswith("the SQL bench needs")


def test_cli_unknown_design_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "sql", str(tmp_path), "--designs", "react,nope",
                                      "--model", "openai:gpt-4o-mini"])
    assert result.exit_code == 2, result.output
    assert "unknown design 'nope'" in result.output and "Traceback" not in result.output


def test_profiles_side_by_side(solvable: list[Task], server: Any, data_dir: Path) -> None:
    """--profile default,paper: one entry per profile, every row and record names its profile;
    the gold answers score 1 under InterCode's observation format too."""
    golds = {t.question: t.gold for t in solvable}
    model = gold_model(golds)
    report = run_sql_bench(data_dir, models=BenchModel(model, model), designs="react",
                           task_list=solvable[:2], concurrency=2, profiles="default,paper",
                           env_factory=lambda: env_factory(server))
    assert report.profiles == ["default", "paper"]
    assert [e.profile for e in report.entries] == ["default", "paper"]
    assert [r.profile for r in report.results] == ["default"] * 2 + ["paper"] * 2
    assert all(e.success_rate == 1.0 for e in report.entries)
    assert "| react | paper | all | 100.0%" in sql_to_markdown(report)
