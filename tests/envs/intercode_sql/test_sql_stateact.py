"""StateAct few-shot template and StateFlow machine of InterCode-SQL on the real MariaDB/Spider.

The template's demos are replayed through the real environment: every written observation must be
exactly what the environment answers (and every ``tables inspected`` line what it tracks). Tests
needing the data or the server are skipped when either is absent (see ``conftest.py``).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateact import STOP, parse_output
from adapt.envs.intercode_sql import InterCodeSQL, tasks
from adapt.envs.intercode_sql.task_sets import Task
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel, ScriptedModel
from adapt.sim.prompt_parse import STATEACT_MARKER
from tests.support.sqldb import Server, make_env

FIELDS = InterCodeSQL.state_fields
#: the identifiers the StateAct executor substitutes
ALLOWED = {"task", "context", "state_fields", "step_format"}
SUFFIX = "\n\n$task\n$context\n"
EXAMPLES = "Here are some examples.\n\n"
#: ``intercode_sql/dev/3`` (easy): the task of the end-to-end runs (not one of the demos)
RUN_TASK_ID = "intercode_sql/dev/3"


@dataclass
class DemoStep:
    raw: str
    action: str
    observation: str
    state: dict[str, str]


@dataclass
class Demo:
    header: str  # Database: / Tables: / Task: lines, as the environment's task observation
    steps: list[DemoStep] = field(default_factory=list)

    @property
    def db(self) -> str:
        return self.header.split("\n")[0].removeprefix("Database: ")

    @property
    def question(self) -> str:
        return self.header.split("\n")[2].removeprefix("Task: ")


def template() -> str:
    return InterCodeSQL().prompt_template("stateact")


def demos(text: str) -> list[Demo]:
    """The demos of the template: a task block, a blank line, then the StateAct steps; the
    ``observation:`` of a step runs until the next ``goal:`` line (observations span lines)."""
    body = text.split(EXAMPLES, 1)[1].removesuffix(SUFFIX)
    blocks = body.split("\n\n")
    assert len(blocks) % 2 == 0, "each demo is a task block and a step block"
    out: list[Demo] = []
    for header, steps_block in zip(blocks[::2], blocks[1::2], strict=True):
        demo = Demo(header)
        chunks = ("\n" + steps_block).split("\ngoal: ")[1:]
        for chunk in chunks:
            head, observation = ("goal: " + chunk).split("\nobservation: ", 1)
            parsed = parse_output(head, FIELDS)
            assert parsed.warnings == [] and parsed.action is not None, head
            demo.steps.append(DemoStep(head, parsed.action, observation, parsed.state))
        out.append(demo)
    return out


@pytest.fixture
def task(data_dir: Path) -> Task:
    return next(t for t in tasks(data_dir, "easy") if t.id == RUN_TASK_ID)


# -- the template ----------------------------------------------------------------------------
def test_template_exists_and_uses_only_allowed_identifiers() -> None:
    text = template()
    tpl = string.Template(text)
    assert tpl.is_valid()
    assert set(tpl.get_identifiers()) <= ALLOWED
    assert sorted(tpl.get_identifiers()) == ["context", "task"]
    assert text.count("$") == 2
    # ends like the TextCraft template, so the executor appends the live task and trajectory
    assert text.endswith(SUFFIX)
    assert text.endswith(InterCodeSQL().prompt_template("executor")[-len(SUFFIX) :])
    assert STATEACT_MARKER in text.lower()
    assert "tables inspected:" in text and EXAMPLES in text
    filled = tpl.substitute(task="TASK", context="")
    assert filled.endswith("observation: OK.\n\nTASK\n\n")


def test_demos_are_well_formed_stateact_steps() -> None:
    found = demos(template())
    assert len(found) == 2
    for demo in found:
        assert [line.split(": ", 1)[0] for line in demo.header.split("\n")] == [
            "Database",
            "Tables",
            "Task",
        ]
        assert demo.steps[-1].action == "think"
        assert demo.steps[-1].raw.endswith("Task completed!\naction: think")
        assert any(s.action == "submit" for s in demo.steps)
        for s in demo.steps:
            assert s.raw.startswith(f"goal: {demo.question}\ntables inspected: ")
            assert list(s.state) == ["tables inspected"]
    actions = [s.action for d in found for s in d.steps]
    assert "execute[SHOW TABLES]" in actions and "execute[DESC teacher]" in actions


def test_demo_actions_replay_to_the_written_observations(env: InterCodeSQL, data_dir: Path) -> None:
    by_question = {(t.db, t.question): t for t in tasks(data_dir)}
    for demo in demos(template()):
        spider = by_question[(demo.db, demo.question)]  # a real Spider dev task
        assert env.reset(**spider.config) == demo.header
        rewards = []
        for s in demo.steps:
            state = env.salient_state() or ""
            inspected = state.split("Tables inspected: ", 1)[1].split(".", 1)[0]
            assert s.state["tables inspected"] == inspected, (demo.question, s.action)
            if s.action == "think":  # no action; the executor shows OK.
                assert s.observation == "OK."
                continue
            result = env.step(s.action)
            assert result.observation == s.observation, (demo.question, s.action)
            rewards.append(result.reward)
        assert rewards[-1] == 1.0


# -- ADaPT with the StateAct executor on a real task -----------------------------------------
def stateact_step(goal: str, inspected: str, thought: str, action: str) -> str:
    return f"goal: {goal}\ntables inspected: {inspected}\nthought: {thought}\naction: {action}"


async def test_adapt_with_stateact_solves_a_real_task(server: Server, task: Task) -> None:
    env = make_env(server)
    sink = MemorySink()
    model = ScriptedModel(
        [
            stateact_step(
                task.question,
                "none",
                "I count the distinct nationalities.",
                f"execute[{task.gold}]",
            ),
            stateact_step(task.question, "conductor", "The single number answers it.", "submit"),
        ]
    )
    config = RunConfig(strategy="adapt", d_max=2, executor={"kind": "stateact"})
    try:
        result = await run_task(env, task.config, config, model, sink=sink)
    finally:
        env.close()
    assert result.success and result.reward == 1.0
    assert model.remaining == 0 and len(model.requests) == 2
    node = sink.nodes[1]
    assert node.termination == "reward"
    first, second = sink.steps[1]
    assert (first.kind, first.text) == ("action", f"execute[{task.gold}]")
    assert first.observation == "Columns: count(DISTINCT Nationality)\n(3,)"
    assert first.extra == {
        "goal": task.question,
        "state": {"tables inspected": "none"},
        "thought": "I count the distinct nationalities.",
    }
    assert second.extra is not None
    assert second.extra["state"] == {"tables inspected": "conductor"}
    assert (second.text, second.reward, second.done) == ("submit", 1.0, True)
    assert second.observation == "Submitted the 1 rows of your last query. Reward: 1"
    # the prompt: the few-shot template, then the live task and the trajectory
    prompts = [r.prompt or "" for r in model.requests]
    assert all(r.stop == [STOP] for r in model.requests)
    assert prompts[0].startswith(template().split(EXAMPLES, 1)[0])
    assert prompts[0].endswith(
        f"observation: OK.\n\nDatabase: orchestra\nTables: conductor, orchestra, performance, "
        f"show\nTask: {task.question}\n\n"
    )
    assert prompts[1].endswith(
        f"action: execute[{task.gold}]\nobservation: Columns: count(DISTINCT Nationality)\n(3,)\n"
    )


# -- the StateFlow machine on a real task ----------------------------------------------------
#: a phrase of each model-calling state's instruction (intercode_sql.yaml)
STATE_PHRASES = {
    "Observe": "Use the DESCRIBE [table_name] or DESC [table_name] command",
    "Solve": "formulate a SQL query with SELECT",
    "Verify": "Carefully check if the output answers the question exactly",
    "Error": "Please carefully read the error message",
}


def sql_state(request: ChatRequest) -> str:
    prompt = request.as_prompt()
    found = [s for s, phrase in STATE_PHRASES.items() if phrase in prompt]
    assert len(found) == 1, prompt
    return found[0]


async def test_stateflow_machine_runs_end_to_end_on_a_real_task(server: Server, task: Task) -> None:
    def answer(request: ChatRequest) -> str:
        state = sql_state(request)
        if state == "Observe":
            return (
                "Thought: The conductor table holds the nationalities.\n"
                "Action: execute[DESC conductor]"
            )
        if state in ("Solve", "Error"):
            return f"Thought: I count the distinct nationalities.\nAction: execute[{task.gold}]"
        return "Thought: The output is the single asked number.\nAction: submit"

    env = make_env(server)
    sink = MemorySink()
    model = FunctionModel(answer)
    config = RunConfig(strategy="adapt", d_max=1, executor={"kind": "stateflow"})
    try:
        result = await run_task(env, task.config, config, model, sink=sink)
    finally:
        env.close()
    assert result.success and result.reward == 1.0
    steps = sink.steps[1]
    extras = [s.extra or {} for s in steps]
    assert [e["state"] for e in extras] == ["Init", "Observe", "Solve", "Verify"]
    assert [e.get("transition") for e in extras] == ["Observe", "Solve", "Verify", "End"]
    assert [s.text for s in steps] == [
        "execute[SHOW TABLES]",
        "execute[DESC conductor]",
        f"execute[{task.gold}]",
        "submit",
    ]
    assert steps[0].raw == ""  # Init: no model call
    assert steps[0].observation == (
        "Columns: Tables_in_orchestra\n('conductor',)\n('orchestra',)\n('performance',)\n('show',)"
    )
    assert steps[1].observation.startswith(
        "Columns: Field, Type, Null, Key, Default, Extra\n('Conductor_ID', "
    )
    assert steps[2].observation == "Columns: count(DISTINCT Nationality)\n(3,)"
    assert steps[-1].reward == 1.0 and steps[-1].done
    assert sink.nodes[1].termination == "reward"
    assert [sql_state(r) for r in model.requests] == ["Observe", "Solve", "Verify"]
    # each state's prompt carries the question and the real observations so far
    verify = model.requests[-1].as_prompt()
    assert (
        "Question: Database: orchestra\nTables: conductor, orchestra, performance, show\n"
        f"Task: {task.question}\n"
    ) in verify
    assert "Thought: I count the distinct nationalities.\n" in verify
    assert "Observation: Columns: count(DISTINCT Nationality)\n(3,)" in verify
