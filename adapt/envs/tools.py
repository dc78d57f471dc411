"""Actions declared as tools: a name, a description and a JSON schema of the arguments.

An environment that declares its actions as tools has the :class:`DeclaresTools` members. The
declaration is made once and rendered twice: the text executors keep the environment's own
action grammar and prompts (a paper prompt is never changed by it), the ``tools`` executor sends
the declarations as function schemas and turns each call the model makes back into the
environment's text action with ``tool_action``, so every action still goes through
``step(action)`` and is recorded, replayed and verified like any other. An environment that
declares no tools keeps working with every text executor.

The hints (``read_only``, ``destructive``, ``idempotent``) are MCP's tool annotations: what a
call does to the world. Resuming a task after a crash reads them (a call in flight at the crash
is sent again only when it is read-only or idempotent), and an approval rule may name
``"destructive"`` tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


def _no_arguments() -> Mapping[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One action as a tool."""

    #: the function name the model calls (``^[A-Za-z0-9_-]{1,64}$``, as chat APIs require)
    name: str
    description: str
    #: JSON schema of the arguments (an object schema)
    parameters: Mapping[str, Any] = field(default_factory=_no_arguments)
    #: the call changes nothing in the world
    read_only: bool = False
    #: the call may destroy data (delete, overwrite)
    destructive: bool = False
    #: calling it again with the same arguments changes nothing more
    idempotent: bool = False

    def function_schema(self) -> dict[str, Any]:
        """The declaration as an OpenAI chat ``tools`` entry."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": dict(self.parameters)}}


class ToolCallError(ValueError):
    """A call the environment cannot turn into an action (unknown tool, bad arguments). Its
    message is shown to the model as the call's result, as a bad text action's observation
    is; the episode goes on."""


@runtime_checkable
class DeclaresTools(Protocol):
    """An environment whose actions are also tools."""

    def tools(self) -> Sequence[ToolSpec]:
        """The tools of the current episode (after ``reset``; they may depend on the task)."""
        ...

    def tool_action(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The text action a call of tool ``name`` with ``arguments`` stands for (what
        ``step`` takes); raises :class:`ToolCallError` for a call it cannot take."""
        ...


def declared_tools(env: object) -> list[ToolSpec] | None:
    """``env``'s tools, or None when it declares none."""
    if not isinstance(env, DeclaresTools):
        return None
    return list(env.tools())
