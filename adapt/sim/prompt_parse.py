"""Read a TextCraft executor or planner prompt the way a (weak) LLM would: from the text only.

The prompt contract (built by the engine from the environment's templates):

- executor: ``<instructions + demos>\\n\\n<task observation>\\n<context>\\n`` + trajectory lines
  (``> <action>\\n<observation>\\n``) + ``> ``; the model writes one line;
- planner: ``<instructions + demos>\\n\\n<task observation>\\n<context>\\n`` (no trailing ``> ``).
- plan_and_execute: a planner prompt whose instructions contain ``PLAN_AND_EXECUTE_MARKER``
  (asks for one detailed plan over every recipe level);
- stateact: an executor prompt whose instructions contain ``STATEACT_MARKER`` (the StateAct
  executor): ``<instructions + demos>\n\n<task observation>\n<context>\n`` + previous steps,
  each ``goal: ...`` / state lines / ``thought: ...`` / ``action: ...`` / ``observation: ...``;
  the model writes one whole step (``goal:`` ... ``action:`` lines);
- reflection: ``<instructions>\\n\\n<task observation>\\n<context>\\nFailed attempt:\\n`` +
  the failed trajectory lines + ``Reflection:`` (the prompt ends with ``REFLECTION_MARKER``).

The task observation is ``Crafting commands:\\n<commands>\\n\\nGoal: <goal>.``. Demos have the same
shape, so the live task is the text after the LAST ``Crafting commands:``. ``<context>`` is empty
or a propagated inventory line (``Inventory: [oak planks] (4) ``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

COMMANDS_HEADER = "Crafting commands:"

Role = Literal["executor", "stateact", "planner", "plan_and_execute", "reflection"]

#: a phrase only the plan-and-execute template's instructions contain
PLAN_AND_EXECUTE_MARKER = "write one detailed plan for the whole goal"
#: a phrase only the StateAct executor template's instructions contain (any case)
STATEACT_MARKER = "stateact format"
#: the key of the line a StateAct step's observation is on
STATEACT_OBSERVATION = "observation:"
#: the line a reflection prompt ends with (the model writes the reflection after it)
REFLECTION_MARKER = "Reflection:"
#: the line in a reflection prompt after which the failed trajectory follows
FAILED_ATTEMPT_HEADER = "Failed attempt:"

_COUNT_ITEM = re.compile(r"^(\d+)\s*x?\s+(.+)$")
_CRAFT = re.compile(r"craft\s+(.+?)\s+using\s+(.+)$", re.IGNORECASE)
_INVENTORY_ITEM = re.compile(r"\[([^\]]+)\]\s*\((\d+)\)")
_ARTICLE = re.compile(r"^(?:a|an|the|some)\s+", re.IGNORECASE)
_STATEACT_KEY = re.compile(r"^([a-z][a-z _-]*):(?:\s+|$)(.*)$")
_STRAY_PREFIX = re.compile(r"^(?:>\s*|action\s*:\s*)+", re.IGNORECASE)


def normalize_item(name: str) -> str:
    """Lower-case, drop ``minecraft:``, underscores to spaces, collapse spaces, strip ``.``."""
    text = name.strip().lower().replace("minecraft:", "").replace("_", " ")
    text = " ".join(text.split())
    return text.strip(" .,;:!?\"'`")


@dataclass(frozen=True, slots=True)
class Ingredient:
    count: int
    item: str

    def render(self) -> str:
        return f"{self.count} {self.item}"


@dataclass(frozen=True, slots=True)
class CraftCommand:
    """``craft <count> <item> using <n> <ingredient>, ...``"""

    count: int
    item: str
    ingredients: tuple[Ingredient, ...]

    def render(self) -> str:
        using = ", ".join(i.render() for i in self.ingredients)
        return f"craft {self.count} {self.item} using {using}"


@dataclass(frozen=True, slots=True)
class Goal:
    """A (sub-)goal: ``fetch N X`` / ``get N X`` (kind fetch), ``craft [N] X [using ...]``."""

    kind: Literal["fetch", "craft"]
    item: str
    count: int
    #: set for ``craft N X using a, b``: the craft the goal asks to perform once
    ingredients: tuple[Ingredient, ...] | None
    text: str
    #: whether the goal text gave a count explicitly
    explicit_count: bool = True


@dataclass(frozen=True, slots=True)
class TrajectoryStep:
    action: str
    observation: str


@dataclass(frozen=True, slots=True)
class TaskPrompt:
    role: Role
    commands: tuple[CraftCommand, ...]
    goal: Goal | None
    #: the propagated inventory from the context, or None when there is no context
    context_inventory: dict[str, int] | None
    trajectory: tuple[TrajectoryStep, ...]
    #: the live task text (commands, goal and context), without the trajectory
    live_task: str


def parse_count_item(text: str) -> Ingredient | None:
    """``6 dark oak planks`` -> Ingredient(6, "dark oak planks"); no count -> count 1."""
    text = _ARTICLE.sub("", text.strip().rstrip("."))
    match = _COUNT_ITEM.match(text)
    if match:
        item = normalize_item(match.group(2))
        return Ingredient(int(match.group(1)), item) if item else None
    item = normalize_item(text)
    return Ingredient(1, item) if item else None


def parse_craft(text: str) -> CraftCommand | None:
    """Parse ``craft [N] X using n a, m b`` (anywhere in ``text``); None if it does not match."""
    match = _CRAFT.search(text.strip())
    if match is None:
        return None
    target = parse_count_item(match.group(1))
    if target is None:
        return None
    parts = re.split(r",|\band\b", match.group(2).strip().rstrip("."))
    ingredients: list[Ingredient] = []
    for part in parts:
        if not part.strip():
            continue
        ingredient = parse_count_item(part)
        if ingredient is None:
            return None
        ingredients.append(ingredient)
    if not ingredients:
        return None
    return CraftCommand(target.count, target.item, tuple(ingredients))


def parse_inventory(text: str) -> dict[str, int] | None:
    """``Inventory: [oak planks] (4) [stick] (1)`` -> dict; None if ``text`` is no inventory."""
    index = text.find("Inventory:")
    if index < 0:
        return None
    body = text[index + len("Inventory:") :]
    inventory: dict[str, int] = {}
    for name, count in _INVENTORY_ITEM.findall(body):
        item = normalize_item(name)
        inventory[item] = inventory.get(item, 0) + int(count)
    return inventory


def parse_goal(text: str) -> Goal | None:
    """Parse a goal such as ``craft beehive``, ``fetch 6 dark oak planks``, ``get 2 stick``,
    ``craft 4 dark oak planks using 1 dark oak logs`` (count optional, default 1)."""
    raw = text.strip()
    if raw.lower().startswith("goal:"):
        raw = raw[len("goal:") :]
    raw = raw.strip().rstrip(".").strip()
    lowered = raw.lower()
    verb, _, rest = lowered.partition(" ")
    if verb == "craft":
        craft = parse_craft(lowered)
        if craft is not None:
            explicit = _COUNT_ITEM.match(lowered[len("craft") :].strip()) is not None
            return Goal("craft", craft.item, craft.count, craft.ingredients, raw, explicit)
        target = parse_count_item(rest)
        if target is None:
            return None
        explicit = _COUNT_ITEM.match(_ARTICLE.sub("", rest.strip())) is not None
        return Goal("craft", target.item, target.count, None, raw, explicit)
    if verb in {"fetch", "get", "obtain", "collect", "gather", "find"}:
        target = parse_count_item(rest)
        if target is None:
            return None
        return Goal("fetch", target.item, target.count, None, raw)
    return None


def clean_action(text: str) -> str:
    """Strip a stray ``> `` / ``Action:`` prefix from an action the model wrote."""
    return _STRAY_PREFIX.sub("", text.strip()).strip()


def detect_role(prompt: str) -> Role:
    """A reflection prompt ends with ``Reflection:``; a prompt with the StateAct marker is a
    StateAct executor prompt; an executor prompt ends with ``> ``; a prompt with the
    plan-and-execute marker asks for a detailed plan; anything else is a planner prompt."""
    end = prompt.rstrip()
    if end.endswith(REFLECTION_MARKER):
        return "reflection"
    if STATEACT_MARKER in prompt.lower():
        return "stateact"
    if prompt.rstrip(" \t").endswith(">"):
        return "executor"
    if PLAN_AND_EXECUTE_MARKER in prompt.lower():
        return "plan_and_execute"
    return "planner"


def _parse_trajectory(lines: list[str]) -> tuple[TrajectoryStep, ...]:
    steps: list[TrajectoryStep] = []
    action: str | None = None
    observation: list[str] = []
    for line in lines:
        if line.startswith(">"):
            if action is not None:
                steps.append(TrajectoryStep(action, "\n".join(observation).strip()))
            action = line[2:] if line.startswith("> ") else line[1:]
            observation = []
        elif action is not None:
            observation.append(line)
    if action is not None and (action.strip() or any(o.strip() for o in observation)):
        steps.append(TrajectoryStep(action.strip(), "\n".join(observation).strip()))
    return tuple(steps)


def _stateact_action(fields: dict[str, str]) -> str:
    """A StateAct step as the action line a ReAct trajectory would hold: the action, or
    ``think: <thought>`` for a thought step (``action: think``), or ``""`` when missing."""
    action = fields.get("action", "").strip()
    if action.lower() == "think":
        return f"think: {fields.get('thought', '')}".strip()
    return action


def _parse_stateact_trajectory(lines: list[str]) -> tuple[TrajectoryStep, ...]:
    """Steps of lower-case ``key: value`` lines, each closed by an ``observation:`` line (an
    observation may continue on lines without a key)."""
    steps: list[TrajectoryStep] = []
    fields: dict[str, str] = {}
    observation: list[str] | None = None
    for raw in lines:
        line = raw.rstrip()
        match = _STATEACT_KEY.match(line)
        if match is None:
            if observation is not None:
                observation.append(line)
            continue
        key, value = match.group(1), match.group(2).strip()
        if observation is not None:  # a new step starts
            steps.append(TrajectoryStep(_stateact_action(fields), "\n".join(observation).strip()))
            fields, observation = {}, None
        if key == "observation":
            observation = [value]
        else:
            fields[key] = value
    if observation is not None:
        steps.append(TrajectoryStep(_stateact_action(fields), "\n".join(observation).strip()))
    return tuple(steps)


def _reflection_trajectory(rest: list[str]) -> tuple[TrajectoryStep, ...]:
    """The failed trajectory between the last ``Failed attempt:`` and the ``Reflection:`` line."""
    starts = [i for i, line in enumerate(rest) if line.strip() == FAILED_ATTEMPT_HEADER]
    start = starts[-1] + 1 if starts else 0
    ends = [i for i, line in enumerate(rest) if line.strip() == REFLECTION_MARKER and i >= start]
    end = ends[-1] if ends else len(rest)
    return _parse_trajectory(rest[start:end])


def parse_prompt(prompt: str) -> TaskPrompt:
    """Split a prompt into role, live crafting commands, goal, context inventory, trajectory."""
    role = detect_role(prompt)
    start = prompt.rfind(COMMANDS_HEADER)
    live = prompt[start:] if start >= 0 else prompt
    lines = live.splitlines()
    commands: list[CraftCommand] = []
    goal: Goal | None = None
    index = 1 if start >= 0 else 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if line.lower().startswith("goal:"):
            goal = parse_goal(line)
            break
        if start >= 0 and line.lower().startswith("craft"):
            command = parse_craft(line)
            if command is not None:
                commands.append(command)
    if goal is None:
        index = len(lines)
    rest = lines[index:]
    if role == "stateact":
        first_action = next(
            (i for i, line in enumerate(rest) if _STATEACT_KEY.match(line)), len(rest)
        )
    else:
        first_action = next(
            (i for i, line in enumerate(rest) if line.startswith(">")), len(rest)
        )
    context_lines = rest[:first_action]
    context_inventory: dict[str, int] | None = None
    for line in context_lines:
        parsed = parse_inventory(line)
        if parsed is not None:
            context_inventory = parsed
    trajectory: tuple[TrajectoryStep, ...] = ()
    if role == "executor":
        trajectory = _parse_trajectory(rest[first_action:])
    elif role == "stateact":
        trajectory = _parse_stateact_trajectory(rest[first_action:])
    elif role == "reflection":
        trajectory = _reflection_trajectory(rest)
    live_task = "\n".join(lines[: index + first_action])
    return TaskPrompt(
        role=role,
        commands=tuple(commands),
        goal=goal,
        context_inventory=context_inventory,
        trajectory=trajectory,
        live_task=live_task,
    )
