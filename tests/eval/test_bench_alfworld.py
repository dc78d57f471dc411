"""``adapt bench alfworld``: success by task type, with scripted models on generated games."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from typer.testing import CliRunner

from adapt.cli import app
from adapt.engine import RunConfig
from adapt.envs.alfworld.games import generated_game
from adapt.errors import InvalidConfig
from adapt.eval.alfworld import (
    TASK_TYPES,
    run_alfworld_bench,
    select_games,
    to_markdown,
    write_alfworld_report,
)
from adapt.eval.textcraft import BenchModel
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

_TASK = re.compile(r"Your task is to: (.+?)\.\n")


def walkthrough_model(split: str, indices: list[int]) -> FunctionModel:
    """Plays each game's walkthrough (the executor reads the task and its own trajectory)."""
    plans: dict[str, list[str]] = {}
    for i in indices:
        game = generated_game(split, i)
        sentence = re.search(r"Your task is to: (.+?)\.", game.grammar)
        assert sentence is not None
        plans[sentence.group(1)] = list(game.walkthrough)

    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        if request.role != "executor":
            return "Step 1: do it\nExecution Order: (Step 1)"
        *_, current = _TASK.finditer(prompt)
        done = prompt[current.end():].count("\n> ") - 1
        script = plans.get(current.group(1), [])
        return script[done] if done < len(script) else "think: Task failed!"

    return FunctionModel(reply, name="walkthrough")


def give_up_model() -> FunctionModel:
    def reply(request: ChatRequest) -> str:
        if request.role == "planner":
            return "Step 1: look around\nExecution Order: (Step 1)"
        return "think: I cannot do this. Task failed!"

    return FunctionModel(reply, name="gives-up")


def test_games_are_selected_by_type_in_turn() -> None:
    picked = select_games("test", limit=8)
    assert [g.task_type for g in picked] == [*TASK_TYPES, "pick", "clean"]
    assert [g.task_type for g in select_games("dev", "heat,cool")] == ["heat", "cool"] * 5
    with pytest.raises(InvalidConfig, match="unknown task type 'juggle'"):
        select_games("dev", "juggle")
    with pytest.raises(InvalidConfig, match="unknown split"):
        select_games("nope")


@pytest.mark.slow
def test_bench_reports_success_by_task_type(tmp_path: Path) -> None:
    games = select_games("dev", limit=6)
    oracle = walkthrough_model("dev", [int(g.config["index"]) for g in games])
    report = run_alfworld_bench(split="dev", limit=6, strategies="adapt,react", d_max=2,
                                models=[BenchModel(oracle, oracle),
                                        BenchModel(give_up_model(), give_up_model())])
    assert report.task_count == 6 and report.tasks_by_type == dict.fromkeys(TASK_TYPES, 1)
    by = {(e.model, e.strategy): e for e in report.entries}
    for strategy in ("adapt", "react"):
        wins = by["walkthrough", strategy]
        assert wins.success_rate == 1.0
        assert {k: s.successes for k, s in wins.by_type.items()} == dict.fromkeys(TASK_TYPES, 1)
        assert by["gives-up", strategy].success_rate == 0.0
    assert by["gives-up", "adapt"].llm_calls > by["gives-up", "react"].llm_calls  # it planned
    paths = write_alfworld_report(report, tmp_path)
    assert [p.name for p in paths] == ["report.json", "report.md", "tasks.jsonl"]
    data = json.loads(paths[0].read_text())
    assert data["entries"][0]["by_type"]["clean"]["success_rate"] == 1.0
    assert "| clean (n=1) |" in to_markdown(report)
    assert len(paths[2].read_text().splitlines()) == 6 * 2 * 2


def test_the_command_fails_clearly_on_bad_options() -> None:
    out = CliRunner().invoke(app, ["bench", "alfworld", "--task-type", "juggle"])
    assert out.exit_code == 2 and "unknown task type 'juggle'" in out.output
    assert "Traceback" not in out.output


def test_profiles_side_by_side() -> None:
    """--profile default,paper on ALFWorld: every row names its profile; under paper the games
    run with roll-back of failed sub-tasks and win by their walkthrough all the same."""
    games = select_games("dev", limit=2)
    oracle = walkthrough_model("dev", [int(g.config["index"]) for g in games])
    report = run_alfworld_bench(split="dev", limit=2, strategies="react", d_max=1,
                                models=BenchModel(oracle, oracle), profiles="default,paper")
    assert report.profiles == ["default", "paper"]
    assert [(e.profile, e.success_rate) for e in report.entries] == [("default", 1.0),
                                                                      ("paper", 1.0)]
    assert [r.profile for r in report.results] == ["default"] * 2 + ["paper"] * 2
    assert "| react | paper |" in to_markdown(report)


def liar_model() -> FunctionModel:
    def reply(request: ChatRequest) -> str:
        if request.role == "planner":
            return "Step 1: look around\nExecution Order: (Step 1)"
        return "think: I put it there. Task completed!"

    return FunctionModel(reply, name="liar")


def test_self_assessed_is_the_claim_and_every_node_check_is_recorded() -> None:
    """A model that claims success at once: self-assessed 100% with verification off (0% real
    success), 0% with env; the records carry the claim and the check of every task node."""
    liar = liar_model()
    by = {}
    for mode in ("off", "env"):
        by[mode] = run_alfworld_bench(split="dev", limit=2, strategies="react,adapt", d_max=2,
                                      models=BenchModel(liar, liar),
                                      base_config=RunConfig(verification=mode))
    off = {e.strategy: e for e in by["off"].entries}
    env = {e.strategy: e for e in by["env"].entries}
    for strategy in ("react", "adapt"):
        assert off[strategy].success_rate == env[strategy].success_rate == 0.0
        assert off[strategy].self_assessed_success_rate == 1.0
        assert env[strategy].self_assessed_success_rate == 0.0
    assert all(r.claimed_success is True for r in by["off"].results)
    assert all(r.claimed_success is False for r in by["env"].results)
    react = [r for r in by["env"].results if r.strategy == "react"]
    assert all([(c.claim, c.verdict, c.termination) for c in r.node_checks]
               == [(True, "refuted", "refuted")] for r in react)
    # adapt under env: the refuted root is decomposed; "look around" is checked, not decidable
    assert env["adapt"].checkable_subgoal_share == 0.0
    assert off["adapt"].checkable_subgoal_share is None
    assert "| self-assessed |" in to_markdown(by["env"])


def test_the_command_passes_verification_on(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``adapt bench alfworld --verification off|env`` with a model that claims success at
    once (the settings' model replaced by the liar): off keeps the claim, env refutes it."""
    from adapt.service.model_factory import ModelFactory

    monkeypatch.setattr(ModelFactory, "build", lambda self, spec, *a, **k: liar_model())
    terminations = {}
    for mode in ("off", "env"):
        out = CliRunner().invoke(app, [
            "bench", "alfworld", "--split", "dev", "--limit", "1", "--strategies", "react",
            "--d-max", "1", "--model", "sim:textcraft", "--verification", mode,
            "--out", str(tmp_path / mode)])
        assert out.exit_code == 0, out.output
        (record,) = [json.loads(line)
                     for line in (tmp_path / mode / "tasks.jsonl").read_text().splitlines()]
        assert record["claimed_success"] is (mode == "off")
        terminations[mode] = [c["termination"] for c in record["node_checks"]]
    assert terminations == {"off": ["completed"], "env": ["refuted"]}
