"""The simulated reflection (Reflexion baseline): 1-2 sentences on why a trial failed.

Reads the live task (goal) and the failed trajectory from the prompt and names the first failed
action and what to do differently; without a failed action it explains the give-up or the
exhausted step budget. One paragraph, no actions, no ``Inventory:`` or ``>`` lines (the text is
shown in later executor prompts).
"""

from __future__ import annotations

from adapt.sim.prompt_parse import TaskPrompt, TrajectoryStep

_FAILURE_PREFIXES = ("Could not find", "Could not execute", "Wrong item format")


def _first_failure(steps: tuple[TrajectoryStep, ...]) -> TrajectoryStep | None:
    return next((s for s in steps if s.observation.startswith(_FAILURE_PREFIXES)), None)


def _clean(text: str) -> str:
    return " ".join(text.replace(">", "").replace("Inventory:", "inventory").split())


def write_reflection(task: TaskPrompt) -> tuple[str, str]:
    """The reflection text and what it is about (failed_action, gave_up, out_of_steps, ...)."""
    goal = task.goal.text.rstrip(".") if task.goal is not None else "the goal"
    steps = task.trajectory
    failure = _first_failure(steps)
    if failure is not None:
        action, observation = _clean(failure.action), _clean(failure.observation)
        if observation.startswith("Could not find enough items"):
            text = (
                f"My action '{action}' failed because I did not hold all of its ingredients. "
                "Next time I should fetch or craft every ingredient in the exact amount the "
                "crafting command needs, and check my inventory, before I craft."
            )
        elif observation.startswith("Could not find a valid recipe"):
            text = (
                f"My action '{action}' failed because it did not match a crafting command. "
                "Next time I should copy the command exactly, with its exact ingredient counts."
            )
        elif action.lower().startswith("get") and observation.startswith("Could not find"):
            item = observation[len("Could not find") :].strip()
            text = (
                f"'{action}' failed because {item} cannot be fetched directly. Next time I "
                f"should craft {item} with its crafting command instead of getting it."
            )
        else:
            text = (
                f"My action '{action}' failed ({observation}). Next time I should write one "
                "action per line and follow the crafting commands exactly."
            )
        return text, "failed_action"
    last = steps[-1].action if steps else ""
    if "task failed" in last.lower():
        return (
            f"I gave up on {goal} because it needed several levels of crafting at once. Next "
            "time I should work bottom-up: fetch the base materials first, craft the "
            f"intermediate items one at a time and only then {goal}.",
            "gave_up",
        )
    if not steps:
        return (
            f"I did not make any progress on {goal}. Next time I should start by fetching the "
            "base materials the crafting commands need.",
            "no_steps",
        )
    return (
        f"I ran out of steps before I finished {goal}. Next time I should not repeat checks "
        "and go straight for the missing ingredients.",
        "out_of_steps",
    )
