"""The text form of a tool call, and the tool list shown to the model.

A text executor writes one action per line: ``tool {"name": "<tool>", "arguments": {...}}``,
the call as one JSON object (strings escaped as JSON does, so a line holds any argument).
:func:`action` writes a call in that form (what ``tool_action`` returns to the ``tools``
executor); :func:`parse` reads one back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapt.envs.tools import ToolSpec

_ACTION = re.compile(r"tool\s*(\{.*\})\s*", re.IGNORECASE | re.DOTALL)
#: characters of a tool's description shown in the tool list
DESCRIPTION_CHARS = 600
INVALID = "Invalid action"


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    arguments: dict[str, Any]


def action(name: str, arguments: Mapping[str, Any]) -> str:
    """The text action of a call: ``tool {"name": ..., "arguments": {...}}`` on one line."""
    return "tool " + json.dumps({"name": name, "arguments": dict(arguments)},
                                ensure_ascii=False)


def parse(text: str) -> Call | str:
    """The call a line stands for, or the observation that says why it is not one."""
    m = _ACTION.fullmatch(text.strip())
    if m is None:
        return (f'{INVALID}: write tool {{"name": "<tool>", "arguments": {{...}}}} to call a '
                "tool, or think: ... for a thought.")
    try:
        data = json.loads(m.group(1))
    except json.JSONDecodeError as exc:
        return f"{INVALID}: the call is not valid JSON ({exc.msg} at character {exc.pos})."
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return f'{INVALID}: the call needs "name" (a tool\'s name) and "arguments" (an object).'
    arguments = data.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return f'{INVALID}: "arguments" must be a JSON object.'
    extra = sorted(set(data) - {"name", "arguments"})
    if extra:
        return f"{INVALID}: unexpected key(s) {', '.join(map(repr, extra))} in the call."
    return Call(data["name"], arguments)


def _signature(schema: Mapping[str, Any]) -> str:
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return "{}"
    required = set(schema.get("required") or ())
    parts = []
    for key, sub in props.items():
        kind = sub.get("type", "any") if isinstance(sub, dict) else "any"
        if isinstance(kind, list):
            kind = "|".join(map(str, kind))
        if kind == "array" and isinstance(sub, dict) and isinstance(sub.get("items"), dict):
            kind = f"array of {sub['items'].get('type', 'any')}"
        parts.append(f'"{key}"{"" if key in required else "?"}: {kind}')
    return "{" + ", ".join(parts) + "}"


def _hints(spec: ToolSpec) -> str:
    if spec.read_only:
        return " (read-only)"
    return " (changes things)" if not spec.destructive else " (may overwrite or delete)"


def tool_list(tools: Sequence[ToolSpec]) -> str:
    """The tools as the model reads them: name, arguments (``?``: optional), description."""
    lines = []
    for t in tools:
        text = " ".join(t.description.split())
        if len(text) > DESCRIPTION_CHARS:
            text = text[:DESCRIPTION_CHARS].rstrip() + "..."
        lines.append(f"- {t.name} {_signature(t.parameters)}{_hints(t)}: {text}")
    return "\n".join(lines)
