"""Actions a person approves: every executor sends its actions through :func:`act`.

With ``approval.actions`` set (action or tool names, or ``"destructive"`` for the tools that
declare themselves so), an action whose name is listed waits for a decision before the
environment sees it (``Run.ask``, kind ``action``): approved, it is sent; edited, the edited
action is sent instead; rejected, it is not sent and the executor's observation is the
rejection with its reason, so the model hears why and the episode goes on.

An action's name is its tool's name (the tools executor), or else the first word of the text
action (``craft 1 stick using ...``: ``craft``), matched without regard to case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapt.engine.proposals import edited_action, rejection_note
from adapt.engine.runtime import Run
from adapt.engine.tree import Node
from adapt.envs.base import StepResult, step_async
from adapt.envs.tools import declared_tools


def action_name(action: str) -> str:
    """The name an approval list matches a text action by: its first word, lower case."""
    words = action.strip().split(maxsplit=1)
    return words[0].lower() if words else ""


def needs_approval(run: Run, name: str) -> bool:
    """Whether the task asks a person before an action called ``name``."""
    listed = {a.lower() for a in run.config.approval.actions}
    if not listed:
        return False
    if name.lower() in listed:
        return True
    if "destructive" in listed:
        for spec in declared_tools(run.env) or ():
            if spec.name.lower() == name.lower():
                return spec.destructive
    return False


async def act(run: Run, node: Node, action: str, *, tool: str | None = None,
              arguments: Mapping[str, Any] | None = None) -> StepResult:
    """Send ``action`` to the run's environment, after a person approved it where the task
    asks for that (``approval.actions``); a rejected action is not sent (its observation is
    the rejection)."""
    name = tool or action_name(action)
    if not needs_approval(run, name):
        return await step_async(run.env, action)
    proposal: dict[str, Any] = {"action": action, "name": name}
    if arguments is not None:
        proposal["arguments"] = dict(arguments)
    decision = await run.ask(node, "action", proposal)
    if decision.decision == "reject":
        return StepResult(observation=rejection_note("action", decision.reason),
                          info={"rejected": True})
    if decision.decision == "edit":
        action = edited_action(decision.proposal or {})
    return await step_async(run.env, action)


__all__ = ["act", "action_name", "needs_approval"]
