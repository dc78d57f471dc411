"""Logic expressions and plan parsing, including property-based round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapt.engine.planning import logic
from adapt.engine.planning.parse import parse_plan
from adapt.engine.tree import LogicExpr, LogicGroup, StepRef

steps = st.builds(StepRef, index=st.integers(min_value=1, max_value=30))
trees: st.SearchStrategy[LogicExpr] = st.recursive(
    steps,
    lambda kids: st.builds(
        LogicGroup, op=st.sampled_from(["and", "or"]), children=st.lists(kids, min_size=2, max_size=4)
    ),
    max_leaves=20,
)


@given(trees)
def test_print_then_parse_gives_the_same_tree(tree: LogicExpr) -> None:
    assert logic.parse(logic.to_text(tree)) == tree


@given(trees, st.sampled_from([str.lower, str.upper, str.title]))
def test_keywords_in_any_case(tree: LogicExpr, case: object) -> None:
    text = case(logic.to_text(tree))  # type: ignore[operator]
    assert logic.parse(text) == tree


def g(op: str, *children: LogicExpr) -> LogicGroup:
    return LogicGroup(op=op, children=list(children))  # type: ignore[arg-type]


def s(i: int) -> StepRef:
    return StepRef(index=i)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Step 1", s(1)),
        ("(Step 1 AND Step 2 AND Step 3)", g("and", s(1), s(2), s(3))),
        ("(Step 1 AND (Step 2 OR Step 3))", g("and", s(1), g("or", s(2), s(3)))),
        ("Step 1 OR Step 2 AND Step 3", g("or", s(1), g("and", s(2), s(3)))),
        ("Step 1 AND Step 2 OR Step 3", g("or", g("and", s(1), s(2)), s(3))),
        ("((step 1) or (STEP 2))", g("or", s(1), s(2))),
        ("(Step 1 AND (Step 2 AND Step 3))", g("and", s(1), g("and", s(2), s(3)))),
    ],
)
def test_parse_examples(text: str, expected: LogicExpr) -> None:
    assert logic.parse(text) == expected


@pytest.mark.parametrize("text", ["", "(Step 1 AND Step 2", "Step 1 AND", "Step one", "Step 1 XOR Step 2",
                                  "Step 1 AND Step 2)"])
def test_syntax_errors(text: str) -> None:
    with pytest.raises(logic.LogicSyntaxError):
        logic.parse(text)


def test_steps_are_renumbered_in_order_of_appearance() -> None:
    plan = parse_plan(
        "# Think: first fetch\nStep 2: fetch 1 oak logs\nStep 5: craft 4 oak planks using 1 oak logs."
        "\nExecution Order: (Step 2 AND Step 5)"
    )
    assert plan.steps == ["fetch 1 oak logs", "craft 4 oak planks using 1 oak logs"]
    assert plan.expression_text == "(Step 1 AND Step 2)" and plan.warnings == []


def test_last_execution_order_line_wins() -> None:
    plan = parse_plan("Step 1: a\nStep 2: b\nExecution Order: (Step 1 AND Step 2)\n"
                      "execution order: (Step 1 OR Step 2)")
    assert plan.expression == g("or", s(1), s(2))


@pytest.mark.parametrize(
    ("order", "warning"),
    [
        (None, "no 'Execution Order:' line"),
        ("(Step 1 AND Step 9)", "unknown step 9"),
        ("((Step 1 AND Step 2)", "could not parse"),
        ("", "could not parse"),
    ],
)
def test_fallback_to_and_with_a_warning(order: str | None, warning: str) -> None:
    text = "Step 1: a\nStep 2: b" + (f"\nExecution Order: {order}" if order is not None else "")
    plan = parse_plan(text)
    assert plan.expression == g("and", s(1), s(2))
    assert any(warning in w for w in plan.warnings), plan.warnings


def test_no_steps() -> None:
    plan = parse_plan("I am not sure what to do.\nExecution Order: (Step 1)")
    assert plan.steps == [] and plan.expression is None and plan.warnings


def test_unreferenced_steps_are_warned_about() -> None:
    plan = parse_plan("Step 1: a\nStep 2: b\nStep 3: c\nExecution Order: (Step 1 OR Step 3)")
    assert any("will not run: 2" in w for w in plan.warnings)


def test_single_step_plan() -> None:
    plan = parse_plan("Step 1: craft stick\nExecution Order: (Step 1)")
    assert plan.steps == ["craft stick"] and plan.expression == s(1)
