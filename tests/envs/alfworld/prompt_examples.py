"""The executor prompt's examples as plays of real games: the prompt must show exactly what the
environment says (``test_alfworld_prompts`` replays them; ``render`` prints them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Example:
    config: dict[str, Any]
    #: played first, not shown (how the earlier sub-tasks left the household)
    prefix: tuple[str, ...] = ()
    #: the sub-goal; None: the whole task (the reset observation)
    goal: str | None = None
    #: the shown lines: actions (``think: ...`` thoughts included)
    actions: tuple[str, ...] = field(default=())


EXAMPLES: tuple[Example, ...] = (
    Example(
        {"seed": 902, "task_type": "clean"},
        actions=(
            "think: To solve the task, I need to find and take a soapbar, then clean it with the "
            "sinkbasin, then put it in the toilet. A soapbar is likely on the countertop, at a "
            "sinkbasin or in a cabinet. I check the countertop first.",
            "go to countertop 1",
            "go to sinkbasin 1",
            "take soapbar 1 from sinkbasin 1",
            "think: Nothing happened: the soapbar here is soapbar 2, not soapbar 1.",
            "take soapbar 2 from sinkbasin 1",
            "clean soapbar 2 with sinkbasin 1",
            "go to toilet 1",
            "move soapbar 2 to toilet 1",
        ),
    ),
    Example(
        {"seed": 900, "task_type": "cool"},
        prefix=("go to sidetable 1", "take potato 3 from sidetable 1"),
        goal="cool the potato with the fridge",
        actions=(
            "think: The context says I carry the potato 3. I go to the fridge and cool it there.",
            "go to fridge 1",
            "cool potato 3 with fridge 1",
            "think: The potato 3 is cool now. Task completed!",
        ),
    ),
    Example(
        {"seed": 900, "task_type": "cool"},
        goal="find and take a mug from a cabinet",
        actions=(
            "think: There are 4 cabinets. I open them one by one until I find a mug.",
            "go to cabinet 1",
            "open cabinet 1",
            "go to cabinet 2",
            "open cabinet 2",
            "go to cabinet 3",
            "open cabinet 3",
            "go to cabinet 4",
            "open cabinet 4",
            "think: I opened all 4 cabinets and none holds a mug. Task failed!",
        ),
    ),
    Example(
        {"seed": 901, "task_type": "examine"},
        actions=(
            "think: To solve the task, I need to find and take a cellphone, then find and use a "
            "desklamp. A cellphone is likely on the bed, on the sidetable, on the desk or in the "
            "drawer. I check the sidetable first.",
            "go to sidetable 1",
            "take cellphone 1 from sidetable 1",
            "think: Now I need the desklamp. It is likely on the desk, the sidetable or the shelf. "
            "It is not on the sidetable, so I check the desk.",
            "go to desk 1",
            "go to shelf 1",
            "use desklamp 1",
        ),
    ),
)


def play(example: Example, env: Any) -> str:
    """The example as it reads in the prompt: the task, the context, then ``> action`` lines
    each followed by its observation (``OK.`` for thoughts)."""
    observation = env.reset(**example.config)
    for action in example.prefix:
        env.step(action)
    if example.goal is None:
        lines = [observation, ""]
    else:
        lines = [env.task_observation(example.goal), env.salient_state() or ""]
    for action in example.actions:
        text = "OK." if action.startswith("think:") else env.step(action).observation
        lines += [f"> {action}", text]
    return "\n".join(lines)


def render() -> str:
    from adapt.envs.alfworld import ALFWorld

    env = ALFWorld()
    try:
        return "\n\n".join(play(e, env) for e in EXAMPLES)
    finally:
        env.close()


if __name__ == "__main__":
    print(render())
