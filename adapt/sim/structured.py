"""The simulated TextCraft agent's structured answers: tool calls (a chat request that offers
tools: the tools executor) and JSON plans (a request with a JSON schema: ``planner.output``).

It reads a tools conversation the way it reads a text executor prompt: the task (the user
message: crafting commands, goal, context inventory) followed by one ``> action`` line and its
observation per tool call already answered, each call read back as TextCraft's text action.
The same policy (``adapt.sim.executor.decide``) writes the next line, which is answered as the
tool call it stands for: ``get`` / ``craft`` / ``inventory``, ``task_completed`` or
``task_failed`` for a thought that declares the task done or failed. A line that is no action
(a format mistake) is answered as text, without a tool call, as a real model sometimes does.

A planner request with a JSON schema is answered with the plan as JSON: ``{"thought",
"steps", "execution_order"}`` (the plan's ``# Think:`` lines, ``Step N:`` texts and
``Execution Order:`` expression).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from adapt.llm.base import ChatRequest, ToolCall
from adapt.sim.prompt_parse import clean_action, parse_count_item, parse_craft

_GET = re.compile(r"^get\s+(\d+)\s+(.+)$", re.IGNORECASE)
_STEP = re.compile(r"^\s*step\s*(\d+)\s*[:.)-]\s*(.*\S)\s*$", re.IGNORECASE)
_ORDER = re.compile(r"execution\s+order\s*:\s*(.*)$", re.IGNORECASE)
_THINK = re.compile(r"^\s*#\s*think\s*:\s*(.*)$", re.IGNORECASE)
_COMPLETED = re.compile(r"task\s+completed", re.IGNORECASE)
_FAILED = re.compile(r"task\s+failed", re.IGNORECASE)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def action_of(name: str, arguments: Mapping[str, Any]) -> str:
    """TextCraft's text action for a tool call (what the simulated agent believes it did)."""
    if name == "get":
        return f"get {arguments.get('count', '')} {arguments.get('item', '')}"
    if name == "craft":
        using = ", ".join(f"{i.get('count', '')} {i.get('item', '')}"
                          for i in arguments.get("ingredients") or () if isinstance(i, dict))
        return f"craft {arguments.get('count', '')} {arguments.get('item', '')} using {using}"
    if name in ("task_completed", "task_failed"):
        note = arguments.get("summary") or arguments.get("reason") or ""
        return f"think: {note} Task {'completed' if name == 'task_completed' else 'failed'}!"
    return name


def text_prompt(request: ChatRequest) -> str:
    """A tools conversation as the text executor prompt it stands for (ends with ``> ``)."""
    messages = request.as_messages()
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    task = next((m.content for m in messages if m.role == "user"), "")
    lines = [task.rstrip("\n")]
    pending: str | None = None
    for m in messages:
        if m.role == "assistant":
            for call in m.tool_calls or ():
                action = action_of(call.name, _arguments(call.arguments))
                lines.append(f"> {action}\n{results.get(call.id, '')}")
            if not m.tool_calls:
                pending = m.content.strip().replace("\n", " ")
        elif m.role == "user" and pending is not None:  # the executor's reminder
            lines.append(f"> {pending}\n{m.content.strip()}")
            pending = None
    return "\n".join(lines) + "\n> "


def tool_call_of(line: str, number: int) -> ToolCall | None:
    """The tool call a line of the policy stands for (``None``: it is no action)."""
    text = line.strip()
    ident = f"call_{number}"
    lowered = text.lower()
    if lowered.startswith("think"):
        thought = text.partition(":")[2].strip()
        if _COMPLETED.search(thought):
            return ToolCall(id=ident, name="task_completed",
                            arguments=json.dumps({"summary": thought}))
        if _FAILED.search(thought):
            return ToolCall(id=ident, name="task_failed",
                            arguments=json.dumps({"reason": thought}))
        return None
    if lowered == "inventory":
        return ToolCall(id=ident, name="inventory", arguments="{}")
    if clean_action(text) != text:  # a stray prefix: a format mistake, written as text
        return None
    got = _GET.match(text)
    if got is not None:
        item = parse_count_item(got.group(2))
        if item is None or " get " in f" {got.group(2)} " or " craft " in f" {got.group(2)} ":
            return None  # two actions on one line
        return ToolCall(id=ident, name="get", arguments=json.dumps(
            {"item": item.item, "count": int(got.group(1))}))
    craft = parse_craft(text) if lowered.startswith("craft ") else None
    if craft is not None and " craft " not in f" {text[6:]} " and " get " not in f" {text} ":
        return ToolCall(id=ident, name="craft", arguments=json.dumps({
            "item": craft.item, "count": craft.count,
            "ingredients": [{"item": i.item, "count": i.count} for i in craft.ingredients]}))
    return None


def answered_calls(request: ChatRequest) -> int:
    """How many assistant answers the conversation holds (numbers the next call's id)."""
    return sum(1 for m in request.as_messages() if m.role == "assistant")


def json_plan(text: str) -> str:
    """A text plan (``# Think:``, ``Step N:``, ``Execution Order:`` lines) as a JSON plan."""
    thoughts: list[str] = []
    steps: list[str] = []
    order = ""
    for line in text.splitlines():
        if (m := _THINK.match(line)) is not None:
            thoughts.append(m.group(1).strip())
        elif (m := _ORDER.search(line)) is not None:
            order = m.group(1).strip()
        elif (m := _STEP.match(line)) is not None:
            steps.append(m.group(2).strip())
        elif line.strip():  # a step that lost its label (a format mistake): kept as a step
            steps.append(line.strip())
    return json.dumps({"thought": " ".join(thoughts), "steps": steps, "execution_order": order})
