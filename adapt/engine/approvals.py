"""A person in the loop: the points where a task asks for approval, and the decisions.

A task asks for approval with ``RunConfig.approval`` (``{"plans": true, "actions": [...]}``).
When the planner returns a plan (and, later, when the executor proposes a named action), the
engine marks the node ``awaiting_approval`` and asks the run's gate (``ApprovalGate``, given to
``run_task(approvals=...)``) for the decision on that point. A point is named by an
:class:`ApprovalRequest` key, ``(node id, kind, number)``, which a replay of the same run meets
again in the same order, so a decision stored once is found by every later attempt.

No decision yet: the engine stores what it did so far and raises ``AwaitingApproval``; the
caller (the service) records the request, lets the task wait without a worker, and runs it
again once decided (the replay pays no LLM call again). A decision:

- ``approve``: the proposal runs as it is;
- ``edit``: the changed proposal runs instead (a plan is validated as the planner's would be:
  :func:`edited_plan`);
- ``reject``: the proposal is dropped and the reason goes back to the model that made it (the
  planner plans again, hearing why: :func:`rejection_note`).

This module is pure: it imports nothing from the service or the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from adapt.engine.planning import logic
from adapt.engine.tree import Plan
from adapt.errors import InvalidProposal, LogicSyntaxError

ApprovalKind = Literal["plan", "action"]
DecisionKind = Literal["approve", "reject", "edit"]
#: the most steps an edited plan may have, and the longest step
MAX_PLAN_STEPS = 64
MAX_STEP_CHARS = 2000

ActionName = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class ApprovalConfig(BaseModel):
    """Where a task asks a person (``approval`` of a task)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plans: bool = Field(
        default=False,
        description="Ask before running each plan the planner returns: the node waits "
        "(awaiting_approval) and the task too (waiting) until approved, edited or rejected "
        "(POST /tasks/{id}/approvals/{approval_id}).")
    actions: list[ActionName] = Field(
        default_factory=list, max_length=64,
        description="Action or tool names to ask about before the executor runs them, or "
        "'destructive' for tools that declare themselves so.")

    @property
    def any(self) -> bool:
        return self.plans or bool(self.actions)


class ApprovalRequest(BaseModel):
    """One point that waits for a decision; ``(node_id, kind, number)`` names it in a run."""

    model_config = ConfigDict(frozen=True)

    node_id: int
    kind: ApprovalKind
    #: the how-manieth request of this kind on the node (1, 2, ... after rejections)
    number: int = Field(ge=1)
    #: what is proposed (a plan: :func:`plan_proposal`)
    proposal: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.node_id}:{self.kind}:{self.number}"


class Decision(BaseModel):
    """A person's decision on one request."""

    model_config = ConfigDict(frozen=True)

    decision: DecisionKind
    reason: str | None = None
    #: the changed proposal of an ``edit``
    proposal: dict[str, Any] | None = None


#: how the engine learns the decision on a request (None: none yet)
ApprovalGate = Callable[[ApprovalRequest], Awaitable[Decision | None]]


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


def rejection_note(kind: ApprovalKind, reason: str | None) -> str:
    """What the model that made a rejected proposal hears before it tries again."""
    what = "plan" if kind == "plan" else "action"
    why = f": {reason.strip()}" if reason and reason.strip() else " (no reason given)"
    return f"A person rejected your previous {what}{why}. Propose a different one."


__all__ = [
    "ApprovalConfig", "ApprovalGate", "ApprovalKind", "ApprovalRequest", "Decision",
    "DecisionKind", "edited_plan", "plan_proposal", "rejection_note",
]
