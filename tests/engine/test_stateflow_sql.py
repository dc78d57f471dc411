"""The InterCode-SQL StateFlow machine with a scripted model and a fake SQL environment."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from adapt.engine import MemorySink, RunConfig, available_strategies, run_task
from adapt.engine.tree import Step, TaskResult
from adapt.envs.base import BaseEnvironment, StepResult
from adapt.llm.testing import ScriptedModel

QUESTION = "What are the names of all high schoolers?"
GOLD = "SELECT name FROM highschooler"


class FakeSQLConfig(BaseModel):
    question: str = QUESTION
    submit_ends: bool = True
    reward: float = 1.0  # for a correct submit


class FakeSQL(BaseEnvironment):
    """``execute[<sql>]`` and ``submit``, answers like InterCode-SQL (one table)."""

    name: ClassVar[str] = "intercode_sql"
    config_model: ClassVar[type[BaseModel]] = FakeSQLConfig
    default_max_steps: ClassVar[int] = 10
    action_grammar: ClassVar[str] = "execute[<sql>] | submit"

    def __init__(self) -> None:
        self.actions: list[str] = []
        self.last_query = ""
        self.cfg = FakeSQLConfig()

    @property
    def goal(self) -> str:
        return self.cfg.question

    def reset(self, **config: Any) -> str:
        self.cfg = FakeSQLConfig(**config)
        self.actions, self.last_query = [], ""
        return self.cfg.question

    def task_observation(self, goal: str) -> str:
        return goal

    def step(self, action: str) -> StepResult:
        self.actions.append(action)
        if action.strip().lower() == "submit":
            reward = self.cfg.reward if self.last_query == GOLD else 0.0
            return StepResult("Submitted.", reward, self.cfg.submit_ends)
        m = re.fullmatch(r"execute\[(.*)\]", action.strip(), re.DOTALL)
        if m is None:
            return StepResult("Error executing query: not an execute[...] action")
        query = self.last_query = m.group(1).strip()
        if query == "SHOW TABLES":
            return StepResult("[('highschooler',)]")
        if query.upper().startswith(("DESC ", "DESCRIBE ")):
            table = query.split()[1]
            if table != "highschooler":
                return StepResult(f"Error executing query: Table 'network_1.{table}' doesn't exist")
            return StepResult("[('ID', 'int'), ('name', 'text'), ('grade', 'int')]")
        if query == GOLD:
            return StepResult("[('John',), ('Haley',)]")
        return StepResult("Error executing query: Unknown column 'nam' in 'field list'")

    def is_failure(self, observation: str) -> bool:
        return observation.startswith("Error executing query")


def reply(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


DESC = reply("The highschooler table looks relevant.", "execute[DESC highschooler]")
TYPO = reply("Select the names.", "execute[SELECT nam FROM highschooler]")
FIXED = reply("The column is called name.", f"execute[{GOLD}]")
SUBMIT = reply("The output lists the names only.", "submit")


async def go(replies: list[str], strategy: str = "adapt",
             **cfg: Any) -> tuple[TaskResult, MemorySink, ScriptedModel, FakeSQL]:
    env = FakeSQL()
    sink = MemorySink()
    model = ScriptedModel(replies)
    config = RunConfig(strategy=strategy, d_max=1, executor={"kind": "stateflow", **cfg})
    result = await run_task(env, {}, config, model, sink=sink)
    assert model.remaining == 0, "script not fully used"
    return result, sink, model, env


def path(steps: list[Step]) -> tuple[list[str], list[str | None]]:
    """The visited states and the transitions recorded in ``Step.extra``."""
    extras = [s.extra or {} for s in steps]
    return [e["state"] for e in extras], [e.get("transition") for e in extras]


async def test_the_paper_trajectory_visits_every_state() -> None:
    result, sink, model, env = await go([DESC, TYPO, FIXED, SUBMIT])
    assert result.success and result.reward == 1.0
    node = sink.nodes[1]
    assert node.termination == "reward" and node.steps_count == 5
    steps = sink.steps[1]
    states, transitions = path(steps)
    assert states == ["Init", "Observe", "Solve", "Error", "Verify"]
    assert transitions == ["Observe", "Solve", "Error", "Verify", "End"]
    assert [s.extra["turn"] for s in steps if s.extra] == [1, 2, 3, 4, 5]
    assert steps[-1].extra == {"state": "Verify", "turn": 5, "transition": "End",
                               "stopped": "done"}
    # Init runs SHOW TABLES without a model call
    assert env.actions == ["execute[SHOW TABLES]", "execute[DESC highschooler]",
                           "execute[SELECT nam FROM highschooler]", f"execute[{GOLD}]", "submit"]
    assert steps[0].raw == "" and steps[0].observation == "[('highschooler',)]"
    assert len(model.requests) == 4
    assert steps[1].raw == DESC and steps[1].text == "execute[DESC highschooler]"


async def test_each_state_prompts_with_its_own_instruction() -> None:
    _, _, model, _ = await go([DESC, TYPO, FIXED, SUBMIT])
    observe, solve, error, verify = model.prompts
    assert all(r.stop == ["\nObservation:"] and r.max_tokens == 256 for r in model.requests)
    assert "Use the DESCRIBE [table_name] or DESC [table_name] command" in observe
    assert observe.startswith("Interact with a MySQL database system using SQL queries")
    assert f"Question: {QUESTION}" in observe
    assert observe.endswith("Action: execute[SHOW TABLES]\nObservation: [('highschooler',)]\n")
    assert "formulate a SQL query with SELECT that answers the question EXACTLY" in solve
    assert solve.endswith(DESC + "\nObservation: [('ID', 'int'), ('name', 'text'), "
                          "('grade', 'int')]\n")
    assert "carefully read the error message" in error
    assert error.endswith("Observation: Error executing query: Unknown column 'nam' in "
                          "'field list'\n")
    assert 'please submit the query with this "Action: submit" command' in verify
    assert verify.endswith("Observation: [('John',), ('Haley',)]\n")
    # no instruction leaks into the next prompt: the history holds outputs and observations
    assert "formulate a SQL query" not in verify


async def test_a_select_from_observe_goes_to_verify_and_errors_go_to_error() -> None:
    bad_desc = reply("Check the students table.", "execute[DESC students]")
    result, sink, _, _ = await go([bad_desc, DESC, FIXED, SUBMIT])
    states, transitions = path(sink.steps[1])
    assert states == ["Init", "Observe", "Error", "Solve", "Verify"]
    assert transitions == ["Observe", "Error", "Solve", "Verify", "End"]
    assert result.success


async def test_submit_reaches_end_as_a_self_assessed_success() -> None:
    env = FakeSQL()
    sink = MemorySink()
    model = ScriptedModel([FIXED, SUBMIT])
    config = RunConfig(d_max=1, executor={"kind": "stateflow"})
    result = await run_task(env, {"submit_ends": False, "reward": 0.0}, config, model, sink=sink)
    node = sink.nodes[1]
    assert node.termination == "completed" and node.self_assessed is True
    assert result.success and result.reward == 0.0
    assert path(sink.steps[1]) == (["Init", "Observe", "Verify"], ["Observe", "Verify", "End"])


async def test_turn_limit_ends_in_end_with_a_failure() -> None:
    result, sink, model, _ = await go([DESC] * 9)  # Init + 9 model turns = max_turns 10
    node = sink.nodes[1]
    assert node.termination == "max_turns" and not result.success
    assert len(model.requests) == 9 and node.steps_count == 10
    last = sink.steps[1][-1]
    assert last.extra == {"state": "Solve", "turn": 10, "transition": "End",
                          "stopped": "max_turns"}


async def test_executor_max_steps_overrides_the_turn_limit() -> None:
    _, sink, model, _ = await go([DESC] * 3, max_steps=4)
    assert len(model.requests) == 3 and sink.nodes[1].termination == "max_turns"


async def test_patience_counts_consecutive_failed_observations() -> None:
    _, sink, model, _ = await go([TYPO] * 3, patience=3)
    assert len(model.requests) == 3 and sink.nodes[1].termination == "patience"
    assert path(sink.steps[1]) == (["Init", "Observe", "Error", "Error"],
                                   ["Observe", "Error", "Error", None])
    assert (sink.steps[1][-1].extra or {})["stopped"] == "patience"


async def test_the_standalone_strategy_is_one_machine_run() -> None:
    assert "stateflow" in available_strategies()
    result, sink, _, _ = await go([DESC, FIXED, SUBMIT], strategy="stateflow", patience=8)
    assert result.strategy == "stateflow" and result.success and result.nodes == 1
    root = sink.nodes[1]
    assert root.status == "succeeded" and root.termination == "reward" and root.depth == 1
    assert path(sink.steps[1])[0] == ["Init", "Observe", "Solve", "Verify"]


@pytest.mark.parametrize("kind", ["react", "stateflow"])
async def test_the_standalone_strategy_ignores_executor_kind(kind: str) -> None:
    env = FakeSQL()
    model = ScriptedModel([FIXED, SUBMIT])
    config = RunConfig(strategy="stateflow", executor={"kind": kind})
    result = await run_task(env, {}, config, model)
    assert result.success
