"""The demonstrations of the paper StateAct prompt set (two per task type, as the StateAct code
shows the two of the game's own type): played on our generated games along their planner
solutions, with thoughts written from each action. ``python -m tests.envs.alfworld.
stateact_paper_demos`` writes ``adapt/envs/alfworld/prompts/paper/stateact/<type>.txt``;
``test_alfworld_stateact_paper`` regenerates them and compares."""

from __future__ import annotations

import re
from pathlib import Path

from tests.envs.alfworld.test_alfworld_stateact import demo

FOLDER = Path(__file__).parents[3] / "adapt/envs/alfworld/prompts/paper/stateact"
#: task type -> the two games (seeds) of its demonstrations
GAMES: dict[str, tuple[int, int]] = {
    "pick": (3, 7), "clean": (3, 8), "heat": (6, 3), "cool": (2, 4), "examine": (2, 7),
    "pick_two": (1, 2),
}
_NAME = re.compile(r"(\w+) \d+")
_TAKE = re.compile(r"take (\w+ \d+) from (\w+ \d+)")
_MOVE = re.compile(r"move (\w+ \d+) to (\w+ \d+)")
_PROCESS = re.compile(r"(heat|cool|clean) (\w+ \d+) with (\w+ \d+)")
_DONE = {"heat": "hot", "cool": "cool", "clean": "clean"}


def _first(walkthrough: list[str]) -> str:
    """The opening thought: what the task needs, from the solution's commands."""
    kind = _NAME.match(_TAKE.search(" ".join(walkthrough)).group(1)).group(1)  # type: ignore[union-attr]
    steps = [f"find and take a {kind}"]
    for command in walkthrough:
        m = _PROCESS.match(command)
        if m:
            steps.append(f"{m.group(1)} it with the {_NAME.match(m.group(3)).group(1)}")  # type: ignore[union-attr]
        if command.startswith("use "):
            steps.append("find a lamp and turn it on")
    target = next((_NAME.match(m.group(2)).group(1) for c in walkthrough  # type: ignore[union-attr]
                   if (m := _MOVE.match(c))), None)
    if target is not None:
        steps.append(f"put it in/on the {target}")
    if sum(c.startswith("take ") for c in walkthrough) == 2:
        steps.append(f"then do the same with a second {kind}")
    return f"To solve the task, I need to {', '.join(steps)}. First I look for a {kind}."


def thoughts(walkthrough: list[str]) -> list[tuple[str, str]]:
    """(thought, action) for every command of a solution."""
    out: list[tuple[str, str]] = []
    held: str | None = None
    for number, command in enumerate(walkthrough):
        place = command.removeprefix("go to ")
        if number == 0:
            thought = _first(walkthrough)
        elif command.startswith("go to "):
            thought = (f"I hold the {held}; next I go to the {place}." if held
                       else f"I go to the {place} to look there.")
        elif command.startswith("open "):
            thought = f"The {command.removeprefix('open ')} is closed, so I open it."
        elif m := _TAKE.match(command):
            held = m.group(1)
            thought = f"There is a {held} here; I take it."
        elif m := _PROCESS.match(command):
            thought = f"I am at the {m.group(3)}, so I {m.group(1)} the {m.group(2)} with it."
        elif m := _MOVE.match(command):
            thought = f"I am at the {m.group(2)}, so I put the {m.group(1)} here."
            held = None
        elif command.startswith("use "):
            thought = f"There is a {command.removeprefix('use ')} here; I turn it on and look " \
                      f"at the {held} under it."
        else:
            thought = "I go on with the plan."
        out.append((thought, command))
    return out


def demonstrations(task_type: str) -> str:
    """The file of a task type: its two demonstrations, a blank line between them."""
    from adapt.envs.alfworld import ALFWorld

    texts = []
    for seed in GAMES[task_type]:
        env = ALFWorld()
        try:
            env.reset(seed=seed, task_type=task_type)
            walkthrough = env.walkthrough()
        finally:
            env.close()
        texts.append(demo(seed, task_type, thoughts(walkthrough)))
    return "\n".join(texts)


if __name__ == "__main__":
    FOLDER.mkdir(exist_ok=True)
    for name in GAMES:
        (FOLDER / f"{name}.txt").write_text(demonstrations(name), encoding="utf-8")
