"""Parse and print plan logic expressions (the planner's ``Execution Order:`` line).

Grammar (case-insensitive keywords, any nesting)::

    expr   := and_ (OR and_)*
    and_   := atom (AND atom)*
    atom   := "Step" INT | "(" expr ")"

Mixed operators without parentheses follow ordinary precedence: AND binds tighter than OR, so
``Step 1 OR Step 2 AND Step 3`` means ``Step 1 OR (Step 2 AND Step 3)``. Parentheses written by
the planner are kept as nested groups (``(Step 1 AND (Step 2 AND Step 3))`` has a nested group),
and ``to_text`` always parenthesises groups, so ``parse(to_text(e)) == e`` for every tree.
"""

from __future__ import annotations

from functools import cache

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

from adapt.engine.tree import LogicExpr, LogicGroup, StepRef
from adapt.errors import LogicSyntaxError as LogicSyntaxError  # raised by parse()

_GRAMMAR = r"""
?start: expr
?expr: and_expr (_OR and_expr)*     -> or_
?and_expr: atom (_AND atom)*        -> and_
?atom: _STEP INT                    -> step
     | "(" expr ")"                 -> paren
_STEP.2: /step/i
_AND.2: /and/i
_OR.2: /or/i
%import common.INT
%import common.WS
%ignore WS
"""


class _Build(Transformer[Token, LogicExpr]):
    def step(self, items: list[Token]) -> StepRef:
        return StepRef(index=int(items[0]))

    def paren(self, items: list[LogicExpr]) -> LogicExpr:
        return items[0]

    def and_(self, items: list[LogicExpr]) -> LogicExpr:
        return items[0] if len(items) == 1 else LogicGroup(op="and", children=items)

    def or_(self, items: list[LogicExpr]) -> LogicExpr:
        return items[0] if len(items) == 1 else LogicGroup(op="or", children=items)


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", maybe_placeholders=False)


def parse(text: str) -> LogicExpr:
    """Parse an expression such as ``(Step 1 AND (Step 2 OR Step 3))``."""
    if not text.strip():
        raise LogicSyntaxError("empty expression")
    try:
        tree = _parser().parse(text)
        result: LogicExpr = _Build().transform(tree)
    except LarkError as exc:
        raise LogicSyntaxError(str(exc).splitlines()[0]) from exc
    return result


def to_text(expr: LogicExpr, *, top: bool = True) -> str:
    """Print an expression; groups are always parenthesised."""
    if isinstance(expr, StepRef):
        return f"Step {expr.index}"
    inner = f" {expr.op.upper()} ".join(to_text(c, top=False) for c in expr.children)
    return f"({inner})"


def step_indices(expr: LogicExpr) -> list[int]:
    """Every step number the expression references, in order (with repeats)."""
    if isinstance(expr, StepRef):
        return [expr.index]
    return [i for c in expr.children for i in step_indices(c)]


def renumber(expr: LogicExpr, mapping: dict[int, int]) -> LogicExpr:
    """Replace step numbers through ``mapping`` (KeyError for an unknown number)."""
    if isinstance(expr, StepRef):
        return StepRef(index=mapping[expr.index])
    return LogicGroup(op=expr.op, children=[renumber(c, mapping) for c in expr.children])


def all_and(n: int) -> LogicExpr:
    """``(Step 1 AND ... AND Step n)``; a single step for n == 1."""
    if n == 1:
        return StepRef(index=1)
    return LogicGroup(op="and", children=[StepRef(index=i) for i in range(1, n + 1)])
