"""Agent behaviour specifications: states with prompts, and a behaviour formula.

Two equivalent text forms load into the same :class:`Spec`:

- the paper's s-expression form::

    (define react-agent
      (:states
        (Ques (:text "[Question]"))
        (Tht (:text "[Thought]"))
        (Obs (:text "[Observation]") (:flags :env-input)))
      (:behavior (next Ques (until (next Tht Obs) Ans))))

- YAML, with the behaviour either as the same formula text or nested mappings::

    name: react-agent
    states:
      - {name: Ques, text: "[Question]"}
      - {name: Obs, text: "[Observation]", env_input: true}
    behavior: {next: [Ques, {until: [{next: [Tht, Obs]}, Ans]}]}

Extensions beyond the paper (all optional): ``(:layout lines)`` makes every state one line that
starts with its prompt (prompts then match only at the start of a line, and a line that starts
with no prompt is a violation); ``(:pattern "regex")`` on a state says what its content must look
like (checked after stripping surrounding whitespace); ``(:doc "...")`` describes a state for
generated prompts; ``(:marker "regex")`` says what a state prompt looks like, so text that looks
like a prompt but is not one (an invented state) is a violation. For specs whose prompts are all
bracketed (``[Thought]``) the marker defaults to a bracketed capitalised word.
"""

from __future__ import annotations

import re
from functools import cached_property
from importlib import resources
from typing import Any, Literal

import yaml  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from adapt.engine.spec import sexpr
from adapt.engine.spec.fsm import FSM, compile_formula
from adapt.errors import SpecSyntaxError

OpName = Literal["next", "until", "or"]
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_BRACKETED = re.compile(r"^\[[^\[\]]+\]$")
DEFAULT_BRACKET_MARKER = r"\[[A-Z][A-Za-z0-9 _-]{0,40}\]"

#: the agent library shipped with the package (paper figures 5 and 10-14)
BUILTINS = ("react", "rewoo", "reflexion", "cot", "direct", "pass")


class Op(BaseModel):
    model_config = ConfigDict(frozen=True)

    op: OpName
    args: tuple[Formula, ...]


Formula = str | Op
Op.model_rebuild()


class StateDef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    text: str = Field(min_length=1, description="The state's prompt, e.g. [Thought].")
    env_input: bool = Field(
        default=False, description="The environment, not the model, supplies this state's text.")
    pattern: str | None = Field(
        default=None, description="A regular expression the state's content must match.")
    doc: str = Field(default="", description="What the state is for (used in prompts).")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"state name {value!r} must start with a letter and use letters, "
                             "digits, '-' or '_'")
        return value

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(
                    f"pattern {value!r} is not a valid regular expression: {exc}") from None
        return value


def format_formula(formula: Formula) -> str:
    if isinstance(formula, str):
        return formula
    return "(" + " ".join([formula.op, *(format_formula(a) for a in formula.args)]) + ")"


class Spec(BaseModel):
    """A validated agent specification; ``fsm`` is its compiled behaviour."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "agent"
    layout: Literal["inline", "lines"] = "inline"
    states: tuple[StateDef, ...] = Field(min_length=1)
    behavior: Formula
    marker: str | None = None

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Spec:
        """A spec from its s-expression or YAML text. Raises ``SpecSyntaxError`` with a message
        that points at the problem."""
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(";"))
        if not body.strip():
            raise SpecSyntaxError("the specification is empty")
        if body.lstrip().startswith("("):
            return _from_sexpr(sexpr.read(text))
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecSyntaxError(f"the specification is neither an s-expression nor valid "
                                  f"YAML: {exc}") from None
        if not isinstance(data, dict):
            raise SpecSyntaxError("a specification is an s-expression (define name (:states ...) "
                                  "(:behavior ...)) or a YAML mapping with states and behavior")
        return cls.from_data(data)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Spec:
        """A spec from plain data (the YAML form, already loaded)."""
        data = dict(data)
        unknown = set(data) - {"name", "layout", "states", "behavior", "marker"}
        if unknown:
            raise SpecSyntaxError(f"unknown key(s) {sorted(unknown)}; a specification has name, "
                                  "states, behavior and optionally layout and marker")
        if "behavior" not in data:
            raise SpecSyntaxError("the specification has no behavior")
        behavior = data["behavior"]
        if isinstance(behavior, str):
            data["behavior"] = _formula_from_sexpr(sexpr.read(behavior))
        else:
            data["behavior"] = _formula_from_data(behavior)
        states = data.get("states")
        if isinstance(states, dict):  # {Name: {text: ...}} shorthand
            data["states"] = [{"name": k, **(v if isinstance(v, dict) else {"text": v})}
                              for k, v in states.items()]
        return cls._validated(data)

    @classmethod
    def builtin(cls, name: str) -> Spec:
        """One of the shipped agents: react, rewoo, reflexion, cot, direct, pass."""
        key = name.strip().lower()
        # only a shipped name: a user-supplied name never becomes a path of its own ("../x")
        path = resources.files("adapt.engine.spec").joinpath("builtins", f"{key}.lisp")
        if key not in available_builtins() or not path.is_file():
            raise SpecSyntaxError(f"no built-in specification {name!r}; built-ins: "
                                  f"{', '.join(available_builtins())}")
        return cls.parse(path.read_text(encoding="utf-8"))

    @classmethod
    def _validated(cls, data: dict[str, Any]) -> Spec:
        try:
            spec = cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'spec'}: {e['msg']}" for e in exc.errors()
            )
            raise SpecSyntaxError(f"invalid specification: {problems}") from None
        spec.check()
        return spec

    # -- validation -------------------------------------------------------------------------
    def check(self) -> None:
        """Reject duplicate or unknown states, malformed formulas and ambiguous prompts."""
        names = [s.name for s in self.states]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SpecSyntaxError(f"state(s) declared twice: {', '.join(dupes)}")
        if not isinstance(self.behavior, Op) or self.behavior.op != "next":
            raise SpecSyntaxError(f"the behavior must start with next, got "
                                  f"{format_formula(self.behavior)!r}")
        _check_formula(self.behavior, set(names))
        for a in self.states:
            for b in self.states:
                if a is not b and b.text.startswith(a.text):
                    raise SpecSyntaxError(
                        f"ambiguous prompts: {a.text!r} (state {a.name}) is a prefix of "
                        f"{b.text!r} (state {b.name}), so the text cannot be split at prompts")
                if a is not b and a.text in b.text:
                    raise SpecSyntaxError(
                        f"ambiguous prompts: {a.text!r} (state {a.name}) occurs inside "
                        f"{b.text!r} (state {b.name}), so the text cannot be split at prompts")
        if self.marker is not None:
            try:
                re.compile(self.marker)
            except re.error as exc:
                raise SpecSyntaxError(f"marker {self.marker!r} is not a valid regular "
                                      f"expression: {exc}") from None
        unused = sorted(set(names) - set(_atoms(self.behavior)))
        if unused:
            raise SpecSyntaxError(f"state(s) declared but not used in the behavior: "
                                  f"{', '.join(unused)}")

    # -- queries ----------------------------------------------------------------------------
    @cached_property
    def fsm(self) -> FSM:
        return compile_formula(self.behavior)

    @cached_property
    def by_name(self) -> dict[str, StateDef]:
        return {s.name: s for s in self.states}

    @cached_property
    def invented_marker(self) -> re.Pattern[str] | None:
        if self.marker is not None:
            return re.compile(self.marker)
        if self.layout == "inline" and all(_BRACKETED.match(s.text) for s in self.states):
            return re.compile(DEFAULT_BRACKET_MARKER)
        return None

    def state(self, name: str) -> StateDef:
        return self.by_name[name]

    def accepts(self, names: list[str]) -> bool:
        """Whether ``names`` is a complete state sequence the behaviour allows."""
        unknown = [n for n in names if n not in self.by_name]
        if unknown:
            return False
        return self.fsm.accepts(list(names))

    @property
    def env_input_states(self) -> list[StateDef]:
        return [s for s in self.states if s.env_input]

    def to_sexpr(self) -> str:
        """The spec in the paper's s-expression form (round-trips through ``parse``)."""
        lines = [f"(define {self.name}"]
        if self.layout != "inline":
            lines.append(f"  (:layout {self.layout})")
        if self.marker is not None:
            lines.append(f"  (:marker {_quote(self.marker)})")
        lines.append("  (:states")
        for s in self.states:
            parts = [f"(:text {_quote(s.text)})"]
            if s.env_input:
                parts.append("(:flags :env-input)")
            if s.pattern is not None:
                parts.append(f"(:pattern {_quote(s.pattern)})")
            if s.doc:
                parts.append(f"(:doc {_quote(s.doc)})")
            lines.append(f"    ({s.name} {' '.join(parts)})")
        lines[-1] += ")"
        lines.append(f"  (:behavior {format_formula(self.behavior)}))")
        return "\n".join(lines)


def load_spec(name_or_text: str) -> Spec:
    """A built-in agent by name (``react``), or a whole specification's text."""
    text = name_or_text.strip()
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", text):
        return Spec.builtin(text)
    return Spec.parse(text)


def available_builtins() -> list[str]:
    root = resources.files("adapt.engine.spec").joinpath("builtins")
    return sorted(p.name.removesuffix(".lisp") for p in root.iterdir()
                  if p.name.endswith(".lisp"))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _atoms(formula: Formula) -> list[str]:
    if isinstance(formula, str):
        return [formula]
    return [a for arg in formula.args for a in _atoms(arg)]


def _check_formula(formula: Formula, names: set[str]) -> None:
    if isinstance(formula, str):
        if formula not in names:
            raise SpecSyntaxError(f"the behavior names an undeclared state {formula!r}; "
                                  f"declared: {', '.join(sorted(names))}")
        return
    if formula.op == "until" and len(formula.args) != 2:
        raise SpecSyntaxError(f"until takes exactly 2 arguments (repeat, then), got "
                              f"{len(formula.args)} in {format_formula(formula)!r}")
    if not formula.args:
        raise SpecSyntaxError(f"{formula.op} needs at least one argument")
    for arg in formula.args:
        _check_formula(arg, names)


# -- s-expression form ----------------------------------------------------------------------
def _formula_from_sexpr(expr: sexpr.SExpr) -> Formula:
    if isinstance(expr, sexpr.Symbol):
        return expr.name
    if isinstance(expr, sexpr.String):
        raise SpecSyntaxError(f"a behavior formula has state names, not strings, at "
                              f"{sexpr.where(expr)}")
    if not expr.items or not isinstance(expr.items[0], sexpr.Symbol):
        raise SpecSyntaxError(f"a formula is (next ...), (until a b) or (or ...); got "
                              f"{sexpr.render(expr)} at {sexpr.where(expr)}")
    head = expr.items[0].name.lower()
    if head not in ("next", "until", "or"):
        raise SpecSyntaxError(f"unknown operator {expr.items[0].name!r} at "
                              f"{sexpr.where(expr.items[0])}; use next, until or or")
    args = tuple(_formula_from_sexpr(a) for a in expr.items[1:])
    if head == "until" and len(args) != 2:
        raise SpecSyntaxError(f"until takes exactly 2 arguments (repeat, then), got {len(args)} "
                              f"at {sexpr.where(expr)}: {sexpr.render(expr)}")
    if not args:
        raise SpecSyntaxError(f"{head} needs at least one argument at {sexpr.where(expr)}")
    return Op(op=head, args=args)


def _formula_from_data(data: Any) -> Formula:
    if isinstance(data, str):
        return data.strip()
    if isinstance(data, dict) and len(data) == 1:
        (op, args), = data.items()
        if op not in ("next", "until", "or"):
            raise SpecSyntaxError(f"unknown operator {op!r} in behavior; use next, until or or")
        if not isinstance(args, list):
            raise SpecSyntaxError(f"{op} takes a list of formulas, got {args!r}")
        return Op(op=op, args=tuple(_formula_from_data(a) for a in args))
    raise SpecSyntaxError(f"a behavior formula is a state name, a formula string or a mapping "
                          f"with one operator (next, until, or); got {data!r}")


def _props(expr: sexpr.SList, owner: str) -> dict[str, list[sexpr.SExpr]]:
    props: dict[str, list[sexpr.SExpr]] = {}
    for item in expr.items[1:]:
        if (not isinstance(item, sexpr.SList) or not item.items
                or not isinstance(item.items[0], sexpr.Symbol)
                or not item.items[0].name.startswith(":")):
            raise SpecSyntaxError(f"expected a property like (:text \"...\") in {owner} at "
                                  f"{sexpr.where(item)}, got {sexpr.render(item)}")
        props[item.items[0].name.lower()] = item.items[1:]
    return props


def _one_string(values: list[sexpr.SExpr], key: str, owner: str) -> str:
    if len(values) != 1 or not isinstance(values[0], sexpr.String):
        raise SpecSyntaxError(f"{key} of {owner} takes one string")
    return values[0].value


def _state_from_sexpr(expr: sexpr.SExpr) -> dict[str, Any]:
    if not isinstance(expr, sexpr.SList) or not expr.items or not isinstance(
            expr.items[0], sexpr.Symbol):
        raise SpecSyntaxError(f"a state is (Name (:text \"[Prompt]\") ...), got "
                              f"{sexpr.render(expr)} at {sexpr.where(expr)}")
    name = expr.items[0].name
    props = _props(expr, f"state {name}")
    unknown = set(props) - {":text", ":flags", ":pattern", ":doc"}
    if unknown:
        raise SpecSyntaxError(f"unknown propert{'y' if len(unknown) == 1 else 'ies'} "
                              f"{', '.join(sorted(unknown))} in state {name} at "
                              f"{sexpr.where(expr)}; use :text, :flags, :pattern, :doc")
    if ":text" not in props:
        raise SpecSyntaxError(f"state {name} at {sexpr.where(expr)} has no (:text \"...\")")
    state: dict[str, Any] = {"name": name, "text": _one_string(props[":text"], ":text", name)}
    for flag in props.get(":flags", []):
        if not isinstance(flag, sexpr.Symbol) or flag.name.lower() != ":env-input":
            raise SpecSyntaxError(f"unknown flag {sexpr.render(flag)} in state {name}; the only "
                                  "flag is :env-input")
        state["env_input"] = True
    if ":pattern" in props:
        state["pattern"] = _one_string(props[":pattern"], ":pattern", name)
    if ":doc" in props:
        state["doc"] = _one_string(props[":doc"], ":doc", name)
    return state


def _from_sexpr(expr: sexpr.SExpr) -> Spec:
    if (not isinstance(expr, sexpr.SList) or len(expr.items) < 2
            or not isinstance(expr.items[0], sexpr.Symbol) or expr.items[0].name != "define"
            or not isinstance(expr.items[1], sexpr.Symbol)):
        raise SpecSyntaxError("a specification starts with (define <name> (:states ...) "
                              "(:behavior ...))")
    name = expr.items[1].name
    props = _props(sexpr.SList(expr.items[1:], expr.line, expr.col), name)
    unknown = set(props) - {":states", ":behavior", ":layout", ":marker"}
    if unknown:
        raise SpecSyntaxError(f"unknown section(s) {', '.join(sorted(unknown))} in {name}; use "
                              ":states, :behavior, :layout, :marker")
    if ":states" not in props:
        raise SpecSyntaxError(f"{name} has no (:states ...)")
    if ":behavior" not in props or len(props[":behavior"]) != 1:
        raise SpecSyntaxError(f"{name} needs exactly one formula in (:behavior ...)")
    data: dict[str, Any] = {
        "name": name,
        "states": [_state_from_sexpr(s) for s in props[":states"]],
        "behavior": _formula_from_sexpr(props[":behavior"][0]),
    }
    if ":layout" in props:
        values = props[":layout"]
        if len(values) != 1 or not isinstance(values[0], sexpr.Symbol) or values[0].name not in (
                "inline", "lines"):
            raise SpecSyntaxError(f"(:layout ...) of {name} is inline or lines")
        data["layout"] = values[0].name
    if ":marker" in props:
        data["marker"] = _one_string(props[":marker"], ":marker", name)
    return Spec._validated(data)
