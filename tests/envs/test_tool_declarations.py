"""Actions declared as tools (``adapt.envs.tools``): the conformance kit's ``tools`` check
passes a well-declared set and names what is wrong with a broken one; every built-in
environment declares its actions, and each call stands for the text action it names."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from adapt.envs.calculator import Calculator
from adapt.envs.testing import ConformanceError, check_environment
from adapt.envs.textcraft import TextCraft
from adapt.envs.tools import (
    ActionTool,
    DeclaresTools,
    ToolActions,
    ToolCallError,
    ToolSpec,
    arguments,
    count,
    declared_tools,
    parse_arguments,
    sample_arguments,
)
from adapt.envs.tooltesting import UNKNOWN_TOOL as UNKNOWN
from tests.envs.test_conformance import Counter

_TICKS = itertools.count()
STEPS = ActionTool(ToolSpec("up", "Count up by some steps.",
                            arguments({"steps": count("How many.")})),
                   lambda args: "up")


class Tooled(ToolActions, Counter):
    """The counter with its actions as tools."""

    action_tools: ClassVar[tuple[ActionTool, ...]] = (
        ActionTool(ToolSpec("up", "Count one up.", arguments({})), "up"),
        ActionTool(ToolSpec("down", "Count one down.", arguments({})), "down"),
        ActionTool(ToolSpec("say", "Say something.",
                            arguments({"words": {"type": "string", "maxLength": 20}})),
                   "{words}"),
    )


def test_a_well_declared_tool_set_passes() -> None:
    report = check_environment(Tooled)
    assert "tools" in report.passed and report.tools == ["down", "say", "up"]
    env = Tooled()
    assert isinstance(env, DeclaresTools) and not isinstance(Counter(), DeclaresTools)
    assert declared_tools(Counter()) is None
    assert [t.name for t in declared_tools(env) or ()] == ["up", "down", "say"]


def _broken(name: str, **members: Any) -> type:
    return type(name, (Tooled,), members)


def _spec(*specs: ToolSpec) -> Any:
    return lambda self: list(specs)


BROKEN_TOOLS: list[tuple[type, str]] = [
    (_broken("NotASpec", tools=lambda self: [{"name": "up"}]), "not a ToolSpec"),
    (_broken("Twice", tools=_spec(ToolSpec("up", "a"), ToolSpec("up", "b"))),
     "declared twice"),
    (_broken("Reserved", tools=_spec(ToolSpec("task_completed", "done"))),
     "the tools executor's own"),
    (_broken("NoDescription", tools=_spec(ToolSpec("up", "  "))), "needs a description"),
    (_broken("NotAnObject", tools=_spec(ToolSpec("up", "u", {"type": "string"}))),
     "must be an object schema"),
    (_broken("BadSchema", tools=_spec(ToolSpec("up", "u", {"type": "object",
                                                           "required": "steps"}))),
     "not a valid JSON schema"),
    (_broken("BadExample", tools=_spec(ToolSpec("up", "u", {
        "type": "object", "properties": {"n": {"type": "integer"}},
        "examples": [{"n": "two"}]}))), "do not fit its schema"),
    (_broken("EmptyAction", tool_action=lambda self, name, args: " "), "not a non-empty str"),
    (_broken("Flaky", tool_action=lambda self, name, args: f"up{next(_TICKS)}"), "then"),
    (_broken("RaisesValueError", tool_action=lambda self, name, args: (
        str(int("x")) if name == UNKNOWN else ToolActions.tool_action(self, name, args))),
     "raised ValueError"),
    (_broken("AcceptsAnything", tool_action=lambda self, name, args: (
        "up" if name == UNKNOWN else ToolActions.tool_action(self, name, args))),
     "an unknown tool must raise ToolCallError"),
    (_broken("NoRequiredCheck", action_tools=(STEPS,),
             tool_action=lambda self, name, args: "up" if name == "up" else
             ToolActions.tool_action(self, name, args)),
     "up without its required arguments must raise ToolCallError"),
]


@pytest.mark.parametrize(("factory", "detail"), BROKEN_TOOLS,
                         ids=[b[0].__name__ for b in BROKEN_TOOLS])
def test_a_broken_tool_set_fails_the_tools_check(factory: type, detail: str) -> None:
    with pytest.raises(ConformanceError) as caught:
        check_environment(factory)
    assert caught.value.check == "tools"
    assert detail in str(caught.value), str(caught.value)


def test_a_call_the_environment_cannot_take_says_why() -> None:
    env = Tooled()
    env.reset()
    with pytest.raises(ToolCallError, match="there is no tool 'jump'; the tools are: up, down"):
        env.tool_action("jump", {})
    with pytest.raises(ToolCallError, match=r"bad arguments for say: words: .* is too long"):
        env.tool_action("say", {"words": "x" * 30})
    with pytest.raises(ToolCallError, match="Additional properties are not allowed"):
        env.tool_action("up", {"steps": 2})
    assert parse_arguments("") == {} and parse_arguments('{"a": 1}') == {"a": 1}
    with pytest.raises(ToolCallError, match="not valid JSON"):
        parse_arguments('{"a": ')
    with pytest.raises(ToolCallError, match="must be a JSON object"):
        parse_arguments("[1]")


def test_sample_arguments_fit_their_schema() -> None:
    schema = {"type": "object", "required": ["a", "b", "c", "d", "e"], "properties": {
        "a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", "y"]},
        "c": {"type": "array", "minItems": 2, "items": {"type": "boolean"}},
        "d": {"type": "string", "minLength": 4}, "e": {"type": ["number", "null"]}}}
    assert sample_arguments(schema) == {"a": 3, "b": "x", "c": [False, False], "d": "xxxx",
                                        "e": 0.0}


# -- the built-in environments -------------------------------------------------------------
def test_textcraft_declares_get_craft_and_inventory() -> None:
    report = check_environment(TextCraft)
    assert report.tools == ["craft", "get", "inventory"]
    env = TextCraft()
    env.reset(seed=3)
    assert env.tool_action("get", {"item": "oak logs", "count": 2}) == "get 2 oak logs"
    assert env.tool_action("craft", {
        "item": "stick", "count": 4,
        "ingredients": [{"item": "oak planks", "count": 2}]}) == (
        "craft 4 stick using 2 oak planks")
    assert env.tool_action("inventory", {}) == "inventory"
    hints = {t.name: (t.read_only, t.idempotent) for t in env.tools()}
    assert hints == {"get": (False, False), "craft": (False, False), "inventory": (True, True)}
    for bad, field in (({"item": "oak\nlogs", "count": 1}, "item"),
                       ({"item": "oak logs", "count": 0}, "count"),
                       ({"item": "oak logs"}, "'count' is a required property")):
        with pytest.raises(ToolCallError, match=field):
            env.tool_action("get", bad)


def test_the_calculator_declares_calculator_and_answer() -> None:
    report = check_environment(Calculator)
    assert report.tools == ["answer", "calculator"]
    env = Calculator()
    env.reset(index=0)
    assert env.tool_action("calculator", {"expression": "2 * (3 + 4)"}) == "calculator 2 * (3 + 4)"
    assert env.tool_action("answer", {"value": 12.5}) == "answer 12.5"
    assert env.step(env.tool_action("calculator", {"expression": "2 * (3 + 4)"})).observation \
        == "14"


def test_the_other_environments_declare_their_actions() -> None:
    from adapt.envs.intercode_bash.tools import TOOLS as BASH
    from adapt.envs.intercode_sql.tools import TOOLS as SQL

    def actions(table: tuple[ActionTool, ...], calls: list[tuple[str, Mapping[str, Any]]]
                ) -> list[str]:
        env = type("T", (ToolActions,), {"action_tools": table})()
        return [env.tool_action(name, args) for name, args in calls]

    assert actions(SQL, [("execute", {"query": "SELECT a\nFROM t"}), ("submit", {})]) == [
        "execute[SELECT a\nFROM t]", "submit"]
    assert actions(BASH, [("execute", {"command": "ls -l /testbed"}), ("submit", {})]) == [
        "execute[ls -l /testbed]", "submit"]
    assert [t.spec.destructive for t in BASH] == [True, False]
    try:
        from adapt.envs.alfworld.tools import TOOLS as ALFWORLD
    except ImportError:  # the alfworld extra: its tools module imports nothing of it
        raise AssertionError("adapt.envs.alfworld.tools must import without the extra") from None
    assert actions(ALFWORLD, [
        ("go_to", {"receptacle": "countertop 1"}),
        ("take", {"object": "mug 1", "receptacle": "countertop 1"}),
        ("put", {"object": "mug 1", "receptacle": "fridge 1"}),
        ("heat", {"object": "mug 1", "receptacle": "microwave 1"}),
        ("look", {}), ("inventory", {})]) == [
        "go to countertop 1", "take mug 1 from countertop 1", "move mug 1 to fridge 1",
        "heat mug 1 with microwave 1", "look", "inventory"]
