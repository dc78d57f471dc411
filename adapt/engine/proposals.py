"""What a person approves, as JSON, and how an edit of it is validated.

- A plan: ``{"steps": [...], "execution_order": "(Step 1 AND Step 2)", "warnings": [...]}``
  (:func:`plan_proposal`); an edit gives ``steps`` and ``execution_order`` (:func:`edited_plan`).
- An action: ``{"action": "craft 1 stick using 1 planks", "name": "craft"}``; an edit gives
  ``action``, the text action to send (:func:`edited_action`).
- A tool call (the tools executor): also its ``arguments`` and the tool's input ``schema``
  (:func:`action_proposal`); an edit gives new ``arguments`` (and the same ``name``), checked
  against that schema (:func:`edited_call`), and the call with them is what runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapt.engine.approvals import ApprovalKind
from adapt.engine.planning import logic
from adapt.engine.tree import Plan
from adapt.envs.tools import argument_errors
from adapt.errors import InvalidProposal, LogicSyntaxError

#: the most steps an edited plan may have, and the longest step (or action)
MAX_PLAN_STEPS = 64
MAX_STEP_CHARS = 2000


def plan_proposal(plan: Plan) -> dict[str, Any]:
    """A plan as it is shown for approval, and the shape an edit of it takes."""
    return {"steps": list(plan.steps), "execution_order": plan.expression_text,
            "warnings": list(plan.warnings)}


def edited_plan(proposal: Mapping[str, Any]) -> Plan:
    """The plan of an edit (``{"steps": [...], "execution_order": "Step 1 AND Step 2"}``),
    validated as a planner's answer is parsed, but strictly: what the planner's parser would
    correct with a warning is refused here (``InvalidProposal`` naming the field)."""
    if not isinstance(proposal, Mapping):
        raise InvalidProposal("", "a plan is an object with steps and execution_order")
    unknown = sorted(set(proposal) - {"steps", "execution_order", "warnings"})
    if unknown:
        raise InvalidProposal(unknown[0], "unknown field of a plan (it takes steps and "
                              "execution_order)")
    steps = proposal.get("steps")
    if not isinstance(steps, list) or not steps:
        raise InvalidProposal("steps", "a plan needs a non-empty list of steps")
    if len(steps) > MAX_PLAN_STEPS:
        raise InvalidProposal("steps", f"at most {MAX_PLAN_STEPS} steps")
    clean: list[str] = []
    for i, step in enumerate(steps):
        if not isinstance(step, str) or not step.strip() or "\n" in step:
            raise InvalidProposal(f"steps.{i}", "a step is one non-empty line of text")
        if len(step) > MAX_STEP_CHARS:
            raise InvalidProposal(f"steps.{i}", f"a step has at most {MAX_STEP_CHARS} "
                                  "characters")
        clean.append(" ".join(step.split()))
    order = proposal.get("execution_order")
    if order is None or (isinstance(order, str) and not order.strip()):
        expression = logic.all_and(len(clean))
    elif not isinstance(order, str):
        raise InvalidProposal("execution_order", "the execution order is a string such as "
                              "'(Step 1 AND Step 2)'")
    else:
        try:
            expression = logic.parse(order)
        except LogicSyntaxError as exc:
            raise InvalidProposal("execution_order", f"cannot parse it: {exc}") from None
        used = logic.step_indices(expression)
        bad = sorted(set(used) - set(range(1, len(clean) + 1)))
        if bad:
            raise InvalidProposal("execution_order", f"refers to step {bad[0]}, but the plan "
                                  f"has {len(clean)} steps")
        missing = sorted(set(range(1, len(clean) + 1)) - set(used))
        if missing:
            raise InvalidProposal("execution_order", f"step {missing[0]} is not in the "
                                  "execution order (a step that would never run)")
    raw = "\n".join([*(f"Step {i}: {s}" for i, s in enumerate(clean, 1)),
                     f"Execution Order: {logic.to_text(expression)}"])
    return Plan(raw=raw, steps=clean, expression=expression,
                expression_text=logic.to_text(expression), warnings=["edited by a person"])


def edited_action(proposal: Mapping[str, Any]) -> str:
    """The action of an edit (``{"action": "craft 1 stick using 1 planks"}``): one non-empty
    line (``InvalidProposal`` naming the field otherwise). For a tool, the text action its call
    stands for (what the node's step shows as the action)."""
    if not isinstance(proposal, Mapping):
        raise InvalidProposal("", "an action is an object with the action's text")
    unknown = sorted(set(proposal) - {"action", "name", "arguments"})
    if unknown:
        raise InvalidProposal(unknown[0], "unknown field of an action (it takes action)")
    action = proposal.get("action")
    if not isinstance(action, str) or not action.strip() or "\n" in action.strip():
        raise InvalidProposal("action", "an action is one non-empty line of text")
    if len(action) > MAX_STEP_CHARS:
        raise InvalidProposal("action", f"an action has at most {MAX_STEP_CHARS} characters")
    return action.strip()


def action_proposal(action: str, name: str, arguments: Mapping[str, Any] | None = None,
                    schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An action as it is shown for approval: its text and name, and for a tool call its
    ``arguments`` and the tool's input ``schema`` (what an edit of the arguments must fit)."""
    proposal: dict[str, Any] = {"action": action, "name": name}
    if arguments is not None:
        proposal["arguments"] = dict(arguments)
        if schema is not None:
            proposal["schema"] = dict(schema)
    return proposal


def edited_call(proposal: Mapping[str, Any], original: Mapping[str, Any]) -> dict[str, Any]:
    """The tool call of an edit of ``original`` (a tool call's proposal): ``{"name":
    <the same tool>, "arguments": {...}}``, the arguments checked against the tool's schema
    (``InvalidProposal`` naming ``arguments.<path>`` otherwise)."""
    if not isinstance(proposal, Mapping):
        raise InvalidProposal("", "a tool call is an object with name and arguments")
    if "action" in proposal:
        raise InvalidProposal("action", "give the call's arguments or the text action, not "
                              "both")
    unknown = sorted(set(proposal) - {"name", "arguments", "schema"})
    if unknown:
        raise InvalidProposal(unknown[0], "unknown field of a tool call (it takes name and "
                              "arguments)")
    name = original.get("name")
    if "name" in proposal and proposal["name"] != name:
        raise InvalidProposal("name", f"an edit changes the arguments of the call of {name!r}, "
                              "not the tool (reject it, and say which tool to call)")
    arguments = proposal.get("arguments")
    if not isinstance(arguments, dict):
        raise InvalidProposal("arguments", "the arguments are a JSON object")
    schema = original.get("schema")
    if isinstance(schema, Mapping):
        errors = argument_errors(schema, arguments)
        if errors:
            path, message = errors[0]
            raise InvalidProposal("arguments" + (f".{path}" if path else ""),
                                  f"does not fit the input schema of {name}: {message}")
    return {"name": name, "arguments": arguments}


def rejection_note(kind: ApprovalKind, reason: str | None) -> str:
    """What the model that made a rejected proposal hears before it tries again."""
    what = "plan" if kind == "plan" else "action"
    why = f": {reason.strip()}" if reason and reason.strip() else " (no reason given)"
    return f"A person rejected your previous {what}{why}. Propose a different one."


__all__ = ["MAX_PLAN_STEPS", "MAX_STEP_CHARS", "action_proposal", "edited_action",
           "edited_call", "edited_plan", "plan_proposal", "rejection_note"]
