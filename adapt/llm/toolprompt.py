"""Tool calling for models without a native tool API (``local:`` models, completion prompts):
the conversation rendered as one prompt, and the model's answer constrained to one JSON call.

The prompt (``prompts/tool_calls.txt``) lists each tool with its JSON schema, then the
conversation: the system and user messages as they are, each earlier call as ``Call: <json>``
and its result as ``Result: <text>``; it ends with ``Call: ``. The answer is constrained by a
JSON schema (:func:`call_schema`: one of ``{"name": <tool>, "arguments": <its schema>}``),
which a llama.cpp grammar enforces, and read back with :func:`read_call`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from string import Template
from typing import Any

from adapt.llm.base import ChatRequest, ToolCall

CALL = "Call: "
RESULT = "Result: "
#: what string keywords a grammar converter gets wrong are dropped from the schemas it gets
#: (a ``pattern`` becomes a character class that lets a quote end the JSON string early)
_UNSAFE = ("pattern", "format")


@functools.lru_cache(maxsize=1)
def _template() -> str:
    return resources.files("adapt.llm").joinpath("prompts", "tool_calls.txt").read_text(
        encoding="utf-8")


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    function = tool.get("function")
    return function if isinstance(function, Mapping) else {}


def tools_prompt(request: ChatRequest) -> str:
    """The request (messages and tools) as one completion prompt ending with ``Call: ``."""
    listed = "\n".join(
        f"- {f.get('name')}: {f.get('description', '')} Arguments: "
        f"{json.dumps(f.get('parameters', {}), separators=(',', ':'))}"
        for f in map(_function, request.tools or ()))
    parts = [Template(_template()).safe_substitute(tools=listed).rstrip("\n")]
    for m in request.as_messages():
        if m.role == "assistant" and m.tool_calls:
            parts += [CALL + json.dumps({"name": c.name, "arguments": _loads(c.arguments)})
                      for c in m.tool_calls]
        elif m.role == "tool":
            parts.append(RESULT + m.content)
        elif m.content:
            parts.append(m.content)
    return "\n\n".join(parts) + "\n" + CALL


def _loads(text: str) -> Any:
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


def _safe(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _safe(v) for k, v in schema.items() if k not in _UNSAFE}
    if isinstance(schema, list):
        return [_safe(v) for v in schema]
    return schema


def call_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON schema of one call of one of ``tools``."""
    return {"oneOf": [
        {"type": "object", "properties": {
            "name": {"const": f.get("name")},
            "arguments": _safe(f.get("parameters") or {"type": "object"})},
         "required": ["name", "arguments"], "additionalProperties": False}
        for f in map(_function, tools)]}


def read_call(text: str, number: int) -> ToolCall | None:
    """The call an answer writes (``None``: not a JSON call, e.g. cut at ``max_tokens``)."""
    try:
        value = json.loads(text.strip())
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", {})
    return ToolCall(id=f"call_{number}", name=value["name"],
                    arguments=json.dumps(arguments, ensure_ascii=False))
