"""The calculator's actions as tools: ``calculator`` and ``answer`` (``adapt.envs.tools``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapt.envs.tools import ONE_LINE, ActionTool, ToolSpec, arguments, one_line


def _answer(args: Mapping[str, Any]) -> str:
    return f"answer {args['value']}"


TOOLS: tuple[ActionTool, ...] = (
    ActionTool(ToolSpec(
        "calculator", "Evaluate an arithmetic expression: numbers, + - * / // % **, "
        "parentheses and unary minus. Returns the value or an error.",
        arguments({"expression": one_line("The expression, e.g. (3 * 12) - 5.")},
                  examples=[{"expression": "(3 * 12) - 5"}]),
        read_only=True, idempotent=True),
        "calculator {expression}"),
    ActionTool(ToolSpec(
        "answer", "Submit the final answer to the question: a number. A correct answer ends "
        "the task; a wrong one may be corrected.",
        arguments({"value": {"anyOf": [{"type": "number"}, ONE_LINE],
                             "description": "The answer, e.g. 31."}},
                  examples=[{"value": 31}])),
        _answer),
)
