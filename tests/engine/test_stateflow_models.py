"""StateFlow machines: schema validation, YAML loading and the per-environment choice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapt.engine import RunConfig
from adapt.engine.executors import make_executor
from adapt.engine.executors.stateflow import (
    Machine,
    builtin_machines,
    load_machine,
    machine_for_env,
    parse_machine,
)
from adapt.engine.executors.stateflow.models import Rule
from adapt.engine.runtime import Run
from adapt.errors import UserError
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv


def machine(**states: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "A": {"instruction": "$task", "outputs": ["model", "act"],
              "transitions": [{"to": "B", "when": {"source": "observation", "contains": "x"}},
                              {"to": "A"}]},
        "B": {"final": "success"},
    }
    base.update(states)
    return {"name": "m", "initial": "A", "states": base}


def problem(data: dict[str, Any]) -> str:
    with pytest.raises(UserError) as info:
        parse_machine(__import__("yaml").safe_dump(data), "m.yaml")
    return str(info.value)


def test_a_valid_machine_loads() -> None:
    m = Machine.model_validate(machine())
    assert m.initial == "A" and m.states["B"].final == "success"
    assert [o.kind for o in m.states["A"].outputs] == ["model", "act"]
    assert m.reachable() == {"A", "B"}


def test_transition_to_an_unknown_state_is_named() -> None:
    msg = problem(machine(A={"instruction": "$task", "outputs": ["model", "act"],
                             "transitions": [{"to": "B"}, {"to": "Nowhere"}]}))
    assert "m.yaml: invalid state machine" in msg
    assert "transitions to unknown states: A -> Nowhere" in msg


def test_unreachable_states_are_named() -> None:
    msg = problem(machine(Orphan={"outputs": [{"act": "look"}], "transitions": [{"to": "B"}]}))
    assert "unreachable states (no path from 'A'): Orphan" in msg


def test_states_with_no_way_out_are_named() -> None:
    msg = problem(machine(A={"outputs": [{"act": "look"}], "transitions": [{"to": "C"}]},
                          C={"outputs": [{"act": "look"}]}))
    assert "states with no way out (not final and no transitions): C" in msg
    assert "unreachable states (no path from 'A'): B" in msg


def test_unknown_initial_state_and_missing_final_state() -> None:
    data = machine()
    data["initial"] = "Z"
    assert "initial state 'Z' is not a state (states: A, B)" in problem(data)
    data = machine(B={"outputs": [{"act": "look"}], "transitions": [{"to": "A"}]})
    assert "no final state" in problem(data)


def test_on_max_turns_must_be_final() -> None:
    data = machine()
    data["on_max_turns"] = "A"
    assert "on_max_turns 'A' is not a final state (final states: B)" in problem(data)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"final": "success", "transitions": [{"to": "A"}]},
         "a final state has no outputs and no transitions"),
        ({"outputs": ["model"], "transitions": [{"to": "A"}]},
         "a state with a 'model' output needs an instruction"),
        ({"outputs": ["act"], "transitions": [{"to": "A"}]},
         "a 'model' output must come before it"),
        ({"outputs": [{"prompt": ""}], "transitions": [{"to": "A"}]},
         "a 'prompt' output needs its text"),
        ({"outputs": ["dance"], "transitions": [{"to": "A"}]}, "outputs.0.kind"),
        ({"instruction": "$task $nope", "outputs": ["model"], "transitions": [{"to": "A"}]},
         "unknown template variable(s) $nope"),
        ({"instruction": "cost: $5", "outputs": ["model"], "transitions": [{"to": "A"}]},
         "malformed template"),
        ({"outputs": [{"act": "x"}], "transitions": [
            {"to": "A", "when": {"source": "output", "contains": "a", "regex": "b"}}]},
         "exactly one of contains, startswith, equals, regex (got contains, regex)"),
        ({"outputs": [{"act": "x"}], "transitions": [
            {"to": "A", "when": {"source": "output", "regex": "("}}]}, "invalid regex '('"),
    ],
)
def test_state_errors_name_the_state(state: dict[str, Any], expected: str) -> None:
    data = machine(C=state)
    data["states"]["A"]["transitions"].insert(0, {"to": "C", "when": {"source": "action",
                                                                        "equals": "c"}})
    msg = problem(data)
    assert "states.C" in msg and expected in msg


def test_yaml_errors_are_readable(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"bad.yaml: invalid YAML at line 2, column \d+"):
        parse_machine("name: m\nstates: [A, {B: x]\n", "bad.yaml")
    with pytest.raises(UserError, match="is a YAML mapping"):
        parse_machine("- just a list\n", "list.yaml")
    path = tmp_path / "ok.yaml"
    path.write_text("name: m\ninitial: A\nstates:\n  A: {final: failure}\n")
    assert load_machine(path).states["A"].final == "failure"
    assert load_machine(str(path)).name == "m"
    with pytest.raises(UserError, match="cannot read state machine"):
        load_machine(tmp_path / "missing.yaml")


def test_unquoted_yaml_on_key_is_the_rule_source() -> None:
    text = ("name: m\ninitial: A\nstates:\n  A:\n    outputs: [{act: look}]\n"
            "    transitions:\n      - {to: B, when: {on: observation, contains: x}}\n"
            "      - {to: A}\n  B: {final: success}\n")
    rule = parse_machine(text).states["A"].transitions[0].when[0]
    assert rule.source == "observation" and rule.contains == "x"


def test_rules() -> None:
    values = {"output": "Thought: ok\nAction: submit", "action": "execute[SELECT 1]",
              "observation": "Error executing query: boom"}
    assert Rule(source="observation", startswith="error").matches(values)
    assert not Rule(source="observation", startswith="error", ignore_case=False).matches(values)
    assert Rule(source="action", regex=r"^execute\[\s*select").matches(values)
    assert Rule(source="output", contains="SUBMIT").matches(values)
    assert Rule(source="action", equals="execute[select 1]").matches(values)
    assert Rule(source="action", equals="submit", negate=True).matches(values)


def test_builtin_machines_load() -> None:
    assert {"intercode_sql", "textcraft"} <= set(builtin_machines())
    sql = load_machine("intercode_sql")
    assert sql.initial == "Init" and set(sql.states) == {
        "Init", "Observe", "Solve", "Verify", "Error", "End"}
    assert sql.states["Init"].outputs[0].text == "execute[SHOW TABLES]"
    craft = load_machine("textcraft")
    assert craft.states["End"].final == "success" and craft.states["Fail"].final == "failure"
    with pytest.raises(UserError, match="no built-in StateFlow machine 'nope'; built-in"):
        load_machine("nope")


def test_an_environment_without_a_machine_is_a_user_error(env: ToyEnv) -> None:
    with pytest.raises(UserError, match="no state machine for environment 'toy'"):
        machine_for_env(env)
    config = RunConfig(executor={"kind": "stateflow"})
    with pytest.raises(UserError, match="no state machine for environment 'toy'"):
        make_executor(Run(env, config, ScriptedModel([])))
