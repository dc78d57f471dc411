"""Actions a person approves: every executor sends its actions through :func:`act`.

With ``approval.actions`` set (action or tool names, or ``"destructive"`` for the tools that
declare themselves so), an action whose name is listed waits for a decision before the
environment sees it (``Run.ask``, kind ``action``): approved, it is sent; edited, the edited
action (or, for a tool call, the call with the edited arguments: :func:`act_call`) is sent
instead; rejected, it is not sent and the executor's observation is the
rejection with its reason, so the model hears why and the episode goes on.

An action's name is its tool's name (the tools executor), or else the first word of the text
action (``craft 1 stick using ...``: ``craft``), matched without regard to case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adapt.engine.proposals import action_proposal, edited_action, rejection_note
from adapt.engine.runtime import Run
from adapt.engine.tree import Node
from adapt.envs.base import StepResult, step_async
from adapt.envs.tools import DeclaresTools, ToolCallError, declared_tools


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


@dataclass(frozen=True, slots=True)
class Sent:
    """What :func:`act_call` sent: the result, and the call as the environment took it."""

    result: StepResult
    #: the text action the environment took (an edit's, after an edit)
    action: str
    #: the tool call's arguments as sent (an edit's, after an edit of them)
    arguments: dict[str, Any] | None
    #: a person changed the call before it was sent
    edited: bool = False


async def act(run: Run, node: Node, action: str) -> StepResult:
    """Send the text ``action`` to the run's environment, after a person approved it where
    the task asks for that (``approval.actions``); a rejected action is not sent (its
    observation is the rejection)."""
    return (await _gated(run, node, action, action_name(action), None)).result


async def act_call(run: Run, node: Node, action: str, *, tool: str,
                   arguments: Mapping[str, Any] | None) -> Sent:
    """Send a tool call (``tool`` with ``arguments``, standing for the text ``action``) as
    :func:`act` does; an edit of its arguments is turned into the text action it stands for
    (``tool_action``), and that call is what is sent."""
    return await _gated(run, node, action, tool, arguments)


async def _gated(run: Run, node: Node, action: str, name: str,
                 arguments: Mapping[str, Any] | None) -> Sent:
    args = dict(arguments) if arguments is not None else None
    if not needs_approval(run, name):
        return Sent(await step_async(run.env, action), action, args)
    schema = next((spec.parameters for spec in declared_tools(run.env) or ()
                   if spec.name == name), None) if args is not None else None
    decision = await run.ask(node, "action", action_proposal(action, name, args, schema))
    if decision.decision == "reject":
        return Sent(StepResult(observation=rejection_note("action", decision.reason),
                               info={"rejected": True}), action, args)
    if decision.decision != "edit":
        return Sent(await step_async(run.env, action), action, args)
    edit = decision.proposal or {}
    if "arguments" in edit and isinstance(run.env, DeclaresTools):
        args = dict(edit["arguments"])
        try:
            action = run.env.tool_action(name, args)
        except ToolCallError as exc:  # the service checked the schema; the env says more
            return Sent(StepResult(observation=f"Error: the edited call cannot be taken: "
                                   f"{exc}"), action, args, edited=True)
    else:
        action = edited_action(edit)
    return Sent(await step_async(run.env, action), action, args, edited=True)


__all__ = ["Sent", "act", "act_call", "action_name", "needs_approval"]
