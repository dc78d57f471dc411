"""Turn planner output into a ``Plan``: sub-task steps plus a logic expression.

- Every line ``Step N: <text>`` is a sub-task, renumbered 1, 2, ... in order of appearance.
- The last line containing ``Execution Order:`` holds the expression over ``Step N``
  references (numbers as the planner wrote them), ``AND``/``OR`` in any case, and parentheses.
- A missing expression, an unknown step number or a syntax error (e.g. unbalanced parentheses)
  falls back to AND over all steps in order, with a warning on the plan.
- A plan with no steps is returned with ``steps == []``; the controller fails the node.

A JSON plan (``planner.output: "json"``, :data:`PLAN_SCHEMA`) is read by
:func:`parse_json_plan` with the same rules: its steps are ``Step 1``, ``Step 2``, ... and its
``execution_order`` the expression over them. An answer that is not such an object (an
endpoint that ignored the schema) is read as a text plan, with a warning.
"""

from __future__ import annotations

import json
import re
from typing import Any

from adapt.engine.planning import logic
from adapt.engine.tree import Plan
from adapt.errors import LogicSyntaxError

_STEP_LINE = re.compile(r"^\s*(?:[-*]\s*)?step\s*(\d+)\s*[:.)-]\s*(.*\S)\s*$", re.IGNORECASE)
_ORDER = re.compile(r"execution\s+order\s*:", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

#: the JSON schema of a plan (structured output): every field required, nothing else (what
#: OpenAI's strict mode asks of a schema)
PLAN_SCHEMA: dict[str, Any] = {
    "title": "plan",
    "type": "object",
    "properties": {
        "thought": {"type": "string", "description": "Reasoning before the steps."},
        "steps": {"type": "array", "items": {"type": "string"},
                  "description": "The sub-tasks, in order (Step 1, Step 2, ...)."},
        "execution_order": {"type": "string",
                            "description": "The steps joined with AND / OR, e.g. "
                            "(Step 1 AND Step 2)."},
    },
    "required": ["thought", "steps", "execution_order"],
    "additionalProperties": False,
}


def parse_plan(raw: str) -> Plan:
    steps: list[str] = []
    numbers: dict[int, int] = {}  # number as written -> 1-based position
    warnings: list[str] = []
    order_line: str | None = None
    for line in raw.splitlines():
        found = _ORDER.search(line)
        if found:
            order_line = line[found.end() :].strip()
            continue
        m = _STEP_LINE.match(line)
        if not m:
            continue
        written, text = int(m.group(1)), m.group(2).strip().rstrip(".").strip()
        if not text:
            continue
        steps.append(text)
        if written in numbers:
            warnings.append(f"step number {written} appears more than once; the first is used")
        else:
            numbers[written] = len(steps)

    if not steps:
        return Plan(raw=raw, steps=[], warnings=["the plan has no 'Step N:' lines"])

    fallback = logic.all_and(len(steps))
    if order_line is None:
        warnings.append("no 'Execution Order:' line; running all steps in order (AND)")
        return Plan(raw=raw, steps=steps, expression=fallback,
                    expression_text=logic.to_text(fallback), warnings=warnings)
    try:
        parsed = logic.parse(order_line)
        expression = logic.renumber(parsed, numbers)
    except LogicSyntaxError as exc:
        warnings.append(
            f"could not parse Execution Order {order_line!r} ({exc}); running all steps in "
            "order (AND)"
        )
        expression = fallback
    except KeyError as exc:
        warnings.append(
            f"Execution Order {order_line!r} references unknown step {exc.args[0]}; "
            "running all steps in order (AND)"
        )
        expression = fallback
    unused = sorted(set(range(1, len(steps) + 1)) - set(logic.step_indices(expression)))
    if unused:
        warnings.append(
            "steps not referenced by Execution Order will not run: "
            + ", ".join(str(i) for i in unused)
        )
    return Plan(raw=raw, steps=steps, expression=expression,
                expression_text=logic.to_text(expression), warnings=warnings)


def _json_object(raw: str) -> dict[str, Any] | None:
    fenced = _FENCE.match(raw)
    try:
        value = json.loads(fenced.group(1) if fenced else raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_json_plan(raw: str) -> Plan:
    """A plan written as JSON (:data:`PLAN_SCHEMA`), read with :func:`parse_plan`'s rules; an
    answer that is not a JSON plan is read as a text plan, with a warning saying so."""
    data = _json_object(raw)
    steps = data.get("steps") if data is not None else None
    if data is None or not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        plan = parse_plan(raw)
        return plan.model_copy(update={"warnings": [
            "the planner's answer is not a JSON plan; it was read as a text plan",
            *plan.warnings]})
    order = data.get("execution_order")
    lines = [f"Step {i}: {s}" for i, s in enumerate(steps, 1) if s.strip()]
    if isinstance(order, str) and order.strip():
        lines.append(f"Execution Order: {order}")
    return parse_plan("\n".join(lines)).model_copy(update={"raw": raw})
