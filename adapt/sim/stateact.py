"""The simulated executor answering a StateAct prompt: one whole step as ``key: value`` lines.

The policy is the ReAct one (``adapt.sim.executor.decide``, same knobs and draws); only the
output format differs::

    goal: <the live goal, as the task states it>
    current inventory: <the believed inventory: [item] (n) ..., or nothing>
    thought: <why this action; the think text for a declaration>
    action: <the action; think for a thought step>

Malformed output (``format_error_rate``): two actions on the ``action:`` line, or no ``action:``
line at all (the action only mentioned in the thought).
"""

from __future__ import annotations

from adapt.sim.executor import Decision, Draws, Knobs, believed_inventory, decide
from adapt.sim.prompt_parse import TaskPrompt, clean_action, parse_count_item, parse_craft

#: the TextCraft state field the simulator tracks
INVENTORY_FIELD = "current inventory"


def format_inventory(inventory: dict[str, int]) -> str:
    """``{"oak planks": 4}`` -> ``[oak planks] (4)``; empty -> ``nothing``."""
    return " ".join(f"[{item}] ({n})" for item, n in inventory.items() if n > 0) or "nothing"


def _thought_for(action: str, kind: str) -> str:
    lowered = action.lower()
    if kind == "check_inventory" or lowered == "inventory":
        return "I am not sure what I hold, so I check my inventory."
    if lowered.startswith("get "):
        wanted = parse_count_item(action[4:])
        item = wanted.item if wanted is not None else action[4:]
        return f"No crafting command makes {item}, so it is a base material and I fetch it."
    craft = parse_craft(action)
    if craft is not None:
        return f"I hold the ingredients it needs, so I craft {craft.count} {craft.item}."
    return "This is my next step."


def stateact_step(task: TaskPrompt, decision: Decision) -> tuple[str, str]:
    """Render ``decision`` as one StateAct step; returns the text and what it was."""
    goal = task.goal.text.rstrip(".") if task.goal is not None else "unknown"
    inventory = format_inventory(believed_inventory(task)) if task.goal is not None else "nothing"
    lines = [f"goal: {goal}", f"{INVENTORY_FIELD}: {inventory}"]
    text, kind = decision.text, decision.kind
    if text.lower().startswith("think:"):
        lines += [f"thought: {text[len('think:'):].strip()}", "action: think"]
    elif decision.malformed and kind == "format:stray_prefix":
        action = clean_action(text)
        lines.append(f"thought: {_thought_for(action, kind)} Next: {action}")
        kind = "format:missing_action"
    else:
        first = clean_action(text)
        lines += [f"thought: {_thought_for(first, kind)}", f"action: {first}"]
    return "\n".join(lines), kind


def decide_stateact(task: TaskPrompt, knobs: Knobs, draws: Draws) -> tuple[str, str]:
    """The next StateAct step for ``task`` (the ReAct policy, StateAct format)."""
    return stateact_step(task, decide(task, knobs, draws))
