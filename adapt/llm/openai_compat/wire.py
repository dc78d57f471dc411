"""Chat messages and tool calls in OpenAI's JSON shape, both ways: what the chat backend sends
and reads, and what the simulator's server reads and answers (one module, so the two sides
agree)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from adapt.llm.base import Message, Role, ToolCall

#: the roles a request's message may have, and the role adapt gives each (``developer`` is
#: OpenAI's newer name for ``system``)
ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user",
                          "assistant": "assistant", "tool": "tool"}


class WireError(ValueError):
    """A message or tool call that is not in OpenAI's shape; ``param`` names the field."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def tool_calls_wire(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [{"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}} for c in calls]


def message_wire(message: Message) -> dict[str, Any]:
    """One message as a chat request sends it."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = tool_calls_wire(message.tool_calls)
        if not message.content:
            out["content"] = None  # an assistant message that only calls tools
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def read_tool_calls(raw: object, param: str = "tool_calls") -> list[ToolCall] | None:
    """The tool calls of an answer's (or a request's) message; ``None`` when there are none.
    A call without an id gets ``call_<n>``; arguments a server sent as an object are kept as
    their JSON text."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise WireError(param, f"{param} must be a list")
    calls: list[ToolCall] = []
    for i, item in enumerate(raw):
        where = f"{param}[{i}]"
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise WireError(where, f"{where} must be a function call with a name")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        ident = item.get("id")
        calls.append(ToolCall(id=ident if isinstance(ident, str) and ident else f"call_{i}",
                              name=function["name"], arguments=arguments))
    return calls or None


def _content(value: object, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts: list[str] = []
        for part in value:
            if not isinstance(part, dict) or not isinstance(part.get("text"), str):
                raise WireError(f"{where}.content", f"{where}.content: only text parts are "
                                "supported")
            parts.append(part["text"])
        return "".join(parts)
    raise WireError(f"{where}.content", f"{where}.content must be a string")


def read_messages(raw: object) -> list[Message]:
    """A request's ``messages`` as adapt's; ``WireError`` names the first bad field.
    Messages of an unknown role (``function``) are left out."""
    if not isinstance(raw, list) or not raw:
        raise WireError("messages", "'messages' must be a non-empty list")
    messages: list[Message] = []
    for index, item in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise WireError(where, f"{where} must be an object")
        role = ROLES.get(str(item.get("role", "")))
        if role is None:
            continue
        call_id = item.get("tool_call_id")
        if role == "tool" and not isinstance(call_id, str):
            raise WireError(f"{where}.tool_call_id", f"{where}: a tool message needs the "
                            "tool_call_id of the call it answers")
        messages.append(Message(
            role=role, content=_content(item.get("content"), where),
            tool_calls=read_tool_calls(item.get("tool_calls"), f"{where}.tool_calls")
            if role == "assistant" else None,
            tool_call_id=call_id if role == "tool" else None))
    if not messages:
        raise WireError("messages", "'messages' holds no system, user, assistant or tool "
                        "message")
    return messages


def read_tools(raw: object) -> list[dict[str, Any]] | None:
    """A request's ``tools``: function declarations, each with a name."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise WireError("tools", "'tools' must be a list")
    for i, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (not isinstance(tool, dict) or tool.get("type") != "function"
                or not isinstance(function, dict) or not isinstance(function.get("name"), str)):
            raise WireError(f"tools[{i}]", f"tools[{i}] must be a function declaration "
                            '({"type": "function", "function": {"name": ...}})')
    return list(raw) or None
