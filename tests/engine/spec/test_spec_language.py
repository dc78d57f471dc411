"""The specification language: both text forms, formula compilation, and clear rejections."""

from __future__ import annotations

import pytest

from adapt.engine.spec import BUILTINS, Spec, SpecSyntaxError, available_builtins, load_spec

REACT_SEXPR = """
(define react-agent
  (:states
    (Ques (:text "[Question]"))
    (Tht (:text "[Thought]"))
    (Act (:text "[Action]"))
    (Act-Inp (:text "[Action Input]"))
    (Obs (:text "[Observation]") (:flags :env-input))
    (Final-Tht (:text "[Final Thought]"))
    (Ans (:text "[Answer]")))
  (:behavior
    (next Ques (until (next Tht Act Act-Inp Obs) Final-Tht) Ans)))
"""

REACT_YAML = """
name: react-agent
states:
  - {name: Ques, text: "[Question]"}
  - {name: Tht, text: "[Thought]"}
  - {name: Act, text: "[Action]"}
  - {name: Act-Inp, text: "[Action Input]"}
  - {name: Obs, text: "[Observation]", env_input: true}
  - {name: Final-Tht, text: "[Final Thought]"}
  - {name: Ans, text: "[Answer]"}
behavior:
  next:
    - Ques
    - until: [{next: [Tht, Act, Act-Inp, Obs]}, Final-Tht]
    - Ans
"""


def test_sexpr_and_yaml_load_into_the_same_model() -> None:
    a, b = Spec.parse(REACT_SEXPR), Spec.parse(REACT_YAML)
    assert a == b
    assert a.state("Obs").env_input and not a.state("Tht").env_input
    # the YAML form may also give the behaviour as formula text
    c = Spec.parse(REACT_YAML.split("behavior:")[0]
                   + "behavior: (next Ques (until (next Tht Act Act-Inp Obs) Final-Tht) Ans)\n")
    assert c == a


def test_builtin_react_is_the_papers_figure() -> None:
    assert Spec.builtin("react").model_dump(exclude={"states"}) == \
        Spec.parse(REACT_SEXPR).model_dump(exclude={"states"})
    assert [s.text for s in Spec.builtin("react").states] == \
        [s.text for s in Spec.parse(REACT_SEXPR).states]


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_parses_and_round_trips(name: str) -> None:
    spec = Spec.builtin(name)
    assert Spec.parse(spec.to_sexpr()) == spec
    assert name in available_builtins()
    assert load_spec(name) == spec


REACT_OK = [
    ["Ques", "Final-Tht", "Ans"],
    ["Ques", "Tht", "Act", "Act-Inp", "Obs", "Final-Tht", "Ans"],
    ["Ques"] + ["Tht", "Act", "Act-Inp", "Obs"] * 3 + ["Final-Tht", "Ans"],
]
REACT_BAD = [
    [],
    ["Ques"],
    ["Ques", "Ans"],  # Final-Tht is required
    ["Ques", "Tht", "Act", "Act-Inp", "Final-Tht", "Ans"],  # no observation
    ["Ques", "Tht", "Act-Inp", "Act", "Obs", "Final-Tht", "Ans"],  # swapped
    ["Ques", "Tht", "Tht", "Act", "Act-Inp", "Obs", "Final-Tht", "Ans"],  # repeated
    ["Ques", "Final-Tht", "Ans", "Ans"],  # past the end
    ["Ques", "Plan", "Final-Tht", "Ans"],  # invented
    ["Tht", "Final-Tht", "Ans"],  # does not start with Ques
]


@pytest.mark.parametrize("names", REACT_OK)
def test_react_accepts(names: list[str]) -> None:
    assert Spec.builtin("react").accepts(names)


@pytest.mark.parametrize("names", REACT_BAD)
def test_react_rejects(names: list[str]) -> None:
    assert not Spec.builtin("react").accepts(names)


@pytest.mark.parametrize(("name", "ok", "bad"), [
    ("pass", ["Ques", "Plan", "Act", "Act-Inp", "Act", "Act-Inp", "Sum", "Final-Tht", "Ans"],
     ["Ques", "Plan", "Sum", "Act", "Act-Inp", "Final-Tht", "Ans"]),
    ("pass", ["Ques", "Plan", "Sum", "Plan", "Act", "Act-Inp", "Sum", "Final-Tht", "Ans"],
     ["Ques", "Plan", "Act", "Act-Inp", "Final-Tht", "Ans"]),
    ("rewoo", ["Ques", "Plan", "Act-Lbl", "Act", "Act-Inp", "Plan", "Act-Lbl", "Act", "Act-Inp",
               "Solver"],
     ["Ques", "Plan", "Act", "Act-Inp", "Solver"]),
    ("reflexion", ["Ques", "Tht", "Act", "Act-Inp", "Obs", "Final-Tht", "Prop-Ans", "Eval", "Ref",
                   "Final-Tht", "Prop-Ans", "Eval", "Ref", "Ans"],
     ["Ques", "Final-Tht", "Prop-Ans", "Eval", "Ans"]),
    ("cot", ["Ques", "Tht", "Ans"], ["Ques", "Ans"]),
    ("direct", ["Ques", "Ans"], ["Ques", "Tht", "Ans"]),
])
def test_builtins_accept_and_reject(name: str, ok: list[str], bad: list[str]) -> None:
    spec = Spec.builtin(name)
    assert spec.accepts(ok)
    assert not spec.accepts(bad)


def test_or_and_nested_until() -> None:
    spec = Spec.parse("""(define x (:states (A (:text "[A]")) (B (:text "[B]")) (C (:text "[C]")))
                         (:behavior (next A (until (or B C) A))))""")
    assert spec.accepts(["A", "A"])
    assert spec.accepts(["A", "B", "C", "B", "A"])
    assert not spec.accepts(["A", "B"])
    assert not spec.accepts(["A", "A", "A"])


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ('(define x (:states (A (:text "[A]"))) (:behavior (next A))', "missing ')'"),
    ('(define x (:states (A (:text "[A]"))) (:behavior (next A))))', "unbalanced ')'"),
    ('(define x (:states (A (:text "[A]"))) (:behavior (until A)))', "until takes exactly 2"),
    ('(define x (:states (A (:text "[A]"))) (:behavior (then A)))', "unknown operator 'then'"),
    ('(define x (:states (A (:text "[A]"))) (:behavior (next B)))', "undeclared state 'B'"),
    ('(define x (:states (A (:text "[A]"))) (:behavior (or A)))', "must start with next"),
    ('(define x (:states (A (:text "[A]")) (A (:text "[B]"))) (:behavior (next A)))',
     "declared twice: A"),
    ('(define x (:states (A (:text "[Act")) (B (:text "[Action]"))) (:behavior (next A B)))',
     "'[Act' (state A) is a prefix of '[Action]'"),
    ('(define x (:states (A (:text "Act]")) (B (:text "[Act]"))) (:behavior (next A B)))',
     "occurs inside"),
    ('(define x (:states (A (:text "[A]") (:flags :llm))) (:behavior (next A)))', "unknown flag"),
    ('(define x (:states (A (:txt "[A]"))) (:behavior (next A)))', "unknown property :txt"),
    ('(define x (:states (A (:text "[A]")) (B (:text "[B]"))) (:behavior (next A)))',
     "not used in the behavior: B"),
    ('(define x (:states (A (:text "[A]") (:pattern "("))) (:behavior (next A)))',
     "not a valid regular expression"),
    ("name: x\nstates: [{name: A, text: '[A]'}]\n", "no behavior"),
    ("name: x\nstates: [{name: A}]\nbehavior: (next A)\n", "states.0.text"),
    ("- just\n- a list\n", "YAML mapping"),
])
def test_malformed_specs_are_rejected_with_a_pointer(text: str, message: str) -> None:
    with pytest.raises(SpecSyntaxError, match=None) as info:
        Spec.parse(text)
    assert message in str(info.value)


def test_syntax_errors_name_line_and_column() -> None:
    with pytest.raises(SpecSyntaxError, match=r"line 3, column 14"):
        Spec.parse('(define x\n  (:states (A (:text "[A]")))\n  (:behavior (until A)))')


def test_unknown_builtin_lists_the_builtins() -> None:
    with pytest.raises(SpecSyntaxError, match="built-ins: cot, direct, pass"):
        Spec.builtin("nope")


def test_builtin_names_are_never_paths() -> None:
    """A name is looked up among the shipped ones, never joined into a path of its own."""
    for name in ("../builtins/react", "builtins/../react", "./react"):
        with pytest.raises(SpecSyntaxError, match="no built-in specification"):
            Spec.builtin(name)
