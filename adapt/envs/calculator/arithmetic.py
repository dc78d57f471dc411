"""Safe evaluation of arithmetic expressions: numbers, + - * / // % **, parentheses, unary minus.

The expression is parsed with :mod:`ast` and only those nodes are evaluated: no names, calls,
attributes or other Python. Powers are guarded (``MAX_EXPONENT``) and every intermediate result
must stay below ``MAX_MAGNITUDE``, so no expression can take long or use much memory.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable

MAX_LENGTH = 500
MAX_EXPONENT = 100
MAX_MAGNITUDE = 1e100

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_SYMBOLS = {"×": "*", "÷": "/", "−": "-"}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


class CalculationError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def normalize(expression: str) -> str:
    """``1,200 × 3`` -> ``1200 * 3``: thousands separators dropped, ``×÷−`` as ASCII."""
    text = expression.strip().strip("`").strip()
    for symbol, ascii_op in _SYMBOLS.items():
        text = text.replace(symbol, ascii_op)
    return _THOUSANDS.sub("", text)


def evaluate(expression: str) -> Number:
    """The value of an arithmetic ``expression``; ``CalculationError`` says what is wrong."""
    text = normalize(expression)
    if not text:
        raise CalculationError("the expression is empty")
    if len(text) > MAX_LENGTH:
        raise CalculationError(f"the expression is longer than {MAX_LENGTH} characters")
    if "^" in text:
        raise CalculationError("'^' is not a power; write 2 ** 3")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        raise CalculationError(f"cannot parse {text!r} as arithmetic") from None
    return _eval(tree.body)


def _check(value: Number) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculationError("the result is not a finite number")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculationError("the result is too large")
    return value


def _eval(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CalculationError(f"only numbers are allowed, not {value!r}")
        return _check(value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _eval(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT and abs(left) not in (0, 1):
            raise CalculationError(f"exponents above {MAX_EXPONENT} are not allowed")
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculationError("division by zero") from None
        except OverflowError:
            raise CalculationError("the result is too large") from None
        if isinstance(result, complex):
            raise CalculationError("the result is not a real number")
        return _check(result)
    if isinstance(node, ast.Name):
        raise CalculationError(f"unknown name {node.id!r}: use numbers only")
    if isinstance(node, ast.Call):
        raise CalculationError("function calls are not allowed: use + - * / // % ** only")
    raise CalculationError(f"{type(node).__name__} is not allowed: use numbers, + - * / // % ** "
                           "and parentheses")


def format_number(value: Number) -> str:
    """``12.0`` -> ``12``; other floats with up to 10 significant digits."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    return str(value)
