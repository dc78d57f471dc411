"""The decoding monitor: splitting, validation, the kept text and the correction prefix."""

from __future__ import annotations

import pytest

from adapt.engine.spec import Monitor, Spec, common_prefix

Q = "[Question] What is 2+3?\n"


@pytest.fixture
def react() -> Monitor:
    return Monitor(Spec.builtin("react"))


def test_common_prefix() -> None:
    assert common_prefix(["[Action]", "[Action Input]"]) == "[Action"
    assert common_prefix(["[Action]", "[Thought]"]) == "["
    assert common_prefix(["[Final Thought]"]) == "[Final Thought]"
    assert common_prefix([]) == ""


def test_a_valid_trace_is_kept_whole(react: Monitor) -> None:
    text = Q + "[Thought] add them\n[Action] calculator\n[Action Input] 2+3\n"
    result = react.check(text)
    assert result.valid and result.kept == text and result.prefix == ""
    assert result.states == ["Ques", "Tht", "Act", "Act-Inp"]
    assert result.awaiting == ["Obs"] and not result.complete


def test_a_skipped_state_is_cut_and_the_valid_next_state_prefixed(react: Monitor) -> None:
    # Tht must be followed by Act; the model jumped to Act-Inp
    text = Q + "[Thought] add them\n[Action Input] 2+3\n"
    result = react.check(text)
    assert not result.valid and result.kind == "invalid_transition"
    assert result.kept == Q + "[Thought] add them\n"
    assert result.prefix == "[Action]"
    assert result.violation == "Act-Inp after Tht; expected Act"


def test_a_repeated_state_is_cut(react: Monitor) -> None:
    text = Q + "[Thought] add them\n[Thought] really\n[Action] calculator"
    result = react.check(text)
    assert result.kept == Q + "[Thought] add them\n"
    assert result.prefix == "[Action]"


def test_an_invented_state_is_cut(react: Monitor) -> None:
    text = Q + "[Thought] add them\n[Plan] 1. add\n[Action] calculator"
    result = react.check(text)
    assert result.kind == "unknown_state" and "[Plan]" in (result.violation or "")
    assert result.kept == Q + "[Thought] add them\n"
    assert result.prefix == "[Action]"


def test_the_prefix_is_the_longest_common_prefix_of_the_valid_next_states() -> None:
    # PASS after its plan: an [Action] or the env's [Summary]; at the top of the loop
    # [Thought] or [Final Thought]
    monitor = Monitor(Spec.builtin("pass"))
    result = monitor.check(Q + "[Thought] plan\n[Answer] 5")
    assert result.next_states == ["Act", "Sum"] and result.prefix == "["
    result = monitor.check(Q + "[Thought] plan\n[Action] calculator\n[Action Input] 2+3\n"
                           "[Summary] 5\n[Answer] 5")
    assert result.next_states == ["Final-Tht", "Plan"]
    assert result.prefix == "["
    spec = Spec.parse("""(define t (:states (Q (:text "[Question]")) (A (:text "[Action]"))
        (AI (:text "[Action Input]")) (F (:text "[Final]")))
        (:behavior (next Q (or A AI) F)))""")
    assert Monitor(spec).check("[Question] q [Final] x").prefix == "[Action"


def test_text_before_the_first_state(react: Monitor) -> None:
    result = react.check("Sure! [Question] q")
    assert result.kind == "text_before_first_state"
    assert result.kept == "" and result.prefix == "[Question]"


def test_stopping_early_prefixes_the_shortest_way_to_completion(react: Monitor) -> None:
    text = Q + "[Thought] add them\n[Action] calculator\n[Action Input] 2+3\n[Observation] 5\n"
    assert react.check(text).valid  # not final: more text may come
    result = react.check(text, final=True)
    assert result.kind == "incomplete"
    assert result.kept == text and result.prefix == "[Final Thought]"  # not [Thought]
    # no whitespace at the end: the correction starts a new line
    assert react.check(text.rstrip(), final=True).prefix == "\n[Final Thought]"


def test_an_env_input_state_due_next_is_not_a_violation(react: Monitor) -> None:
    text = Q + "[Thought] t\n[Action] calculator\n[Action Input] 2+3"
    result = react.check(text, final=True)
    assert result.valid and result.awaiting == ["Obs"]


def test_a_complete_trace(react: Monitor) -> None:
    text = Q + "[Final Thought] easy\n[Answer] 5"
    result = react.check(text, final=True)
    assert result.valid and result.complete and result.next_states == []
    # anything after the final state is cut
    result = react.check(text + "\n[Question] next one")
    assert not result.valid and result.kept == text + "\n"
    assert "expected nothing" in (result.violation or "")


def test_empty_content_and_patterns_in_the_lines_layout() -> None:
    planner = Monitor(Spec.builtin("planner"))
    ok = "# Think: two steps\nStep 1: get logs\nStep 2: craft planks\n" \
         "Execution Order: (Step 1 AND Step 2)"
    assert planner.check(ok, final=True).valid
    # "Step" inside the order line is content, not a state (prompts match at line starts)
    assert planner.check(ok, final=True).states == ["Think", "Step", "Step", "Order"]
    # an unlabeled step line: cut before it, nothing common to prefix
    bad = "Step 1: get logs\ncraft planks\nExecution Order: (Step 1)"
    result = planner.check(bad, final=True)
    assert result.kind == "unknown_state"
    assert result.kept == "Step 1: get logs\n" and result.prefix == ""
    # no execution order: the plan is completed with one
    result = planner.check("Step 1: get logs\nStep 2: craft planks\n", final=True)
    assert result.kind == "incomplete" and result.prefix == "Execution Order:"
    # a Step whose content is not "N: text": keep the prompt, rewrite the content
    result = planner.check("Step one get logs\nExecution Order: (Step 1)", final=True)
    assert result.kind == "bad_content" and result.kept == "Step" and result.prefix == ""
    # a line that is still being written is not checked yet
    assert planner.check("Step 1").valid
    # order must come last
    result = planner.check("Step 1: a\nExecution Order: (Step 1)\nStep 2: b", final=True)
    assert result.kept == "Step 1: a\nExecution Order: (Step 1)\n"


def test_textcraft_executor_spec_allows_one_thought_or_one_action() -> None:
    from adapt.envs.textcraft import TextCraft

    monitor = Monitor(Spec.parse(TextCraft().prompt_template("executor_spec")))
    for line in ("get 2 oak logs", "craft 4 oak planks using 1 oak logs", "inventory",
                 "craft 3 oak fence using 2 stick, 4 oak planks", "think: Task completed!"):
        assert monitor.check(line, final=True).valid, line
    result = monitor.check("get 2 oak logs craft 4 oak planks using 1 oak logs", final=True)
    assert result.kind == "bad_content" and result.kept == "get " and result.prefix == ""
    assert monitor.check("inventory please", final=True).kept == "inventory"
    assert monitor.check("> get 2 oak logs", final=True).kind == "unknown_state"
