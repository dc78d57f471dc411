"""Profile ``paper`` runs the StateFlow machines with the routing of the authors' code
(``profiles: paper`` in the machine YAML, deep-merged over it): InterCode-SQL's Observe goes to
Solve (Select) after any action that did not fail, a SELECT too, and only "execute[SELECT" goes
to Verify; InterCode-Bash decides a failed command by the reference's error phrases, not the
exit status. Scripted models, fake environments."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateflow import load_machine, parse_machine
from adapt.envs.base import BaseEnvironment, StepResult
from adapt.errors import UserError
from adapt.llm.testing import ScriptedModel
from tests.engine.test_stateflow_sql import DESC, GOLD, FakeSQL, reply

SELECT = reply("Select the names.", f"execute[{GOLD}]")
SUBMIT = reply("The output answers the question.", "submit")


async def states(env: BaseEnvironment, config: dict[str, Any], profile: str,
                 replies: list[str]) -> list[str]:
    sink = MemorySink()
    await run_task(env, config, RunConfig(strategy="stateflow", profile=profile),
                   ScriptedModel(replies), sink=sink)
    return [str((s.extra or {}).get("state")) for s in sink.steps[1] if s.kind == "action"]


async def test_sql_observe_and_select_goes_to_solve_under_paper() -> None:
    replies = [SELECT, SUBMIT, SUBMIT]
    # the reference: a SELECT in Observe leads to Select (Solve), whose SELECT leads to Verify
    assert await states(FakeSQL(), {}, "paper", replies) == ["Init", "Observe", "Solve"]
    # the project's machine goes to Verify at once
    assert await states(FakeSQL(), {}, "default", replies) == ["Init", "Observe", "Verify"]


class AnyCaseSQL(FakeSQL):
    """FakeSQL that reads keywords in any case, as MariaDB does."""

    def step(self, action: str) -> StepResult:
        return super().step(action.replace("select name from", "SELECT name FROM"))


async def test_sql_paper_routes_by_the_references_exact_select() -> None:
    lower = reply("Select the names.", f"execute[{GOLD.lower()}]")
    # "execute[SELECT" as written: a lower-case select stays in Solve; Verify after SELECT
    replies = [DESC, lower, SELECT, SUBMIT]
    assert await states(AnyCaseSQL(), {}, "paper", replies) == [
        "Init", "Observe", "Solve", "Solve", "Verify"]
    assert await states(AnyCaseSQL(), {}, "default", replies) == [
        "Init", "Observe", "Solve", "Verify", "Verify"]


class FakeBashConfig(BaseModel):
    question: str = "Count the lines of /data/a.txt"


class FakeBash(BaseEnvironment):
    """Answers commands with fixed outputs; ``is_failure`` is the exit status."""

    name: ClassVar[str] = "intercode_bash"
    config_model: ClassVar[type[BaseModel]] = FakeBashConfig
    default_max_steps: ClassVar[int] = 10
    action_grammar: ClassVar[str] = "execute[<command>] | submit"
    #: command -> (output, exit status)
    OUTPUTS: ClassVar[dict[str, tuple[str, int]]] = {
        "wc -l /data/a.txt": ("3 /data/a.txt", 0),
        "grep -c x /data/a.txt": ("0", 1),  # no match: exit status 1, no error phrase
        "cat /dat/a.txt": ("cat: /dat/a.txt: No such file or directory", 0),
    }

    def __init__(self) -> None:
        self.failed = False

    @property
    def goal(self) -> str:
        return FakeBashConfig().question

    def reset(self, **config: Any) -> str:
        return FakeBashConfig(**config).question

    def task_observation(self, goal: str) -> str:
        return goal

    def step(self, action: str) -> StepResult:
        if action.strip() == "submit":
            return StepResult("Submitted.", 1.0, True)
        m = re.fullmatch(r"execute\[(.*)\]", action.strip())
        output, status = self.OUTPUTS.get(m.group(1) if m else "", ("bad", 2))
        self.failed = status != 0
        return StepResult(output)

    def is_failure(self, observation: str) -> bool:
        return self.failed


async def test_bash_paper_detects_errors_by_the_references_phrases() -> None:
    no_match = reply("Count the x lines.", "execute[grep -c x /data/a.txt]")
    typo = reply("Show the file.", "execute[cat /dat/a.txt]")
    count = reply("Count the lines.", "execute[wc -l /data/a.txt]")
    replies = [no_match, typo, count, SUBMIT]
    # paper: exit status 1 without an error phrase is no error; "No such file or directory" is
    assert await states(FakeBash(), {}, "paper", replies) == [
        "Solve", "Verify", "Error", "Verify"]
    # default: the environment's verdict (exit status), whatever the text says
    assert await states(FakeBash(), {}, "default", replies) == [
        "Solve", "Error", "Verify", "Verify"]


def test_a_profile_overlay_is_validated_when_the_machine_loads() -> None:
    text = """
name: m
initial: A
states:
  A: {instruction: go, outputs: [model, act], transitions: [{to: End}]}
  End: {final: success}
profiles:
  paper:
    states:
      A: {transitions: [{to: Nowhere}]}
"""
    with pytest.raises(UserError, match=r"profiles\.paper: .*Nowhere"):
        parse_machine(text, "m.yaml")


def test_the_builtin_machines_have_their_paper_variants() -> None:
    for name in ("intercode_sql", "intercode_bash", "alfworld"):
        machine = load_machine(name)
        assert machine.for_profile("paper") is not machine
        assert machine.for_profile("default") is machine
