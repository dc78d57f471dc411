"""Turn planner output into a ``Plan``: sub-task steps plus a logic expression.

- Every line ``Step N: <text>`` is a sub-task, renumbered 1, 2, ... in order of appearance.
- The last line containing ``Execution Order:`` holds the expression over ``Step N``
  references (numbers as the planner wrote them), ``AND``/``OR`` in any case, and parentheses.
- A missing expression, an unknown step number or a syntax error (e.g. unbalanced parentheses)
  falls back to AND over all steps in order, with a warning on the plan.
- A plan with no steps is returned with ``steps == []``; the controller fails the node.
"""

from __future__ import annotations

import re

from adapt.engine.planning import logic
from adapt.engine.tree import Plan
from adapt.errors import LogicSyntaxError

_STEP_LINE = re.compile(r"^\s*(?:[-*]\s*)?step\s*(\d+)\s*[:.)-]\s*(.*\S)\s*$", re.IGNORECASE)
_ORDER = re.compile(r"execution\s+order\s*:", re.IGNORECASE)


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
