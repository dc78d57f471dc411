"""A small s-expression reader for agent specifications (the paper's Lisp-style form).

Atoms are symbols (``Ques``, ``:text``, ``next``), double-quoted strings with backslash
escapes, and ``;`` comments run to the end of the line. Errors name the line and column.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapt.errors import SpecSyntaxError


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    line: int
    col: int


@dataclass(frozen=True, slots=True)
class String:
    value: str
    line: int
    col: int


@dataclass(slots=True)
class SList:
    items: list[SExpr]
    line: int
    col: int


SExpr = Symbol | String | SList


def where(expr: SExpr) -> str:
    return f"line {expr.line}, column {expr.col}"


def render(expr: SExpr) -> str:
    """Short text of an expression, for error messages."""
    if isinstance(expr, Symbol):
        return expr.name
    if isinstance(expr, String):
        return '"' + expr.value + '"'
    text = "(" + " ".join(render(i) for i in expr.items) + ")"
    return text if len(text) <= 60 else text[:57] + "...)"


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def read(text: str) -> SExpr:
    """Read exactly one expression from ``text``."""
    pos, line, col = 0, 1, 1
    stack: list[SList] = []
    result: SExpr | None = None

    def advance(n: int = 1) -> None:
        nonlocal pos, line, col
        for _ in range(n):
            if text[pos] == "\n":
                line, col = line + 1, 1
            else:
                col += 1
            pos += 1

    def emit(expr: SExpr) -> None:
        nonlocal result
        if stack:
            stack[-1].items.append(expr)
        elif result is None:
            result = expr
        else:
            raise SpecSyntaxError(f"unexpected text after the specification at {where(expr)}")

    while pos < len(text):
        ch = text[pos]
        if ch.isspace():
            advance()
        elif ch == ";":
            while pos < len(text) and text[pos] != "\n":
                advance()
        elif ch == "(":
            stack.append(SList([], line, col))
            advance()
        elif ch == ")":
            if not stack:
                raise SpecSyntaxError(f"unbalanced ')' at line {line}, column {col}")
            done = stack.pop()
            advance()
            emit(done)
        elif ch == '"':
            start_line, start_col = line, col
            advance()
            chars: list[str] = []
            while True:
                if pos >= len(text):
                    raise SpecSyntaxError(
                        f"unterminated string starting at line {start_line}, column {start_col}")
                c = text[pos]
                if c == "\\" and pos + 1 < len(text):
                    chars.append(_ESCAPES.get(text[pos + 1], text[pos + 1]))
                    advance(2)
                    continue
                advance()
                if c == '"':
                    break
                chars.append(c)
            emit(String("".join(chars), start_line, start_col))
        else:
            start_line, start_col, start = line, col, pos
            while pos < len(text) and not text[pos].isspace() and text[pos] not in '();"':
                advance()
            emit(Symbol(text[start:pos], start_line, start_col))
    if stack:
        opened = stack[-1]
        raise SpecSyntaxError(f"unbalanced '(' opened at {where(opened)}: missing ')'")
    if result is None:
        raise SpecSyntaxError("the specification is empty")
    return result
