"""Prompt templates: placeholders, exact layout, and demos that replay through the env."""

from __future__ import annotations

import re
import string

import pytest

from adapt.envs.textcraft import TextCraft
from adapt.envs.textcraft.book import load_book
from adapt.envs.textcraft.solver import obtain

SUFFIX = "\n\n$task\n$context\n"
BOOK = load_book()
COMMANDS = frozenset(BOOK.commands())

EXECUTOR_DEMO = re.compile(
    r"Crafting commands:\n(?:craft [^\n]+\n)+\nGoal: [^\n]+\.\n\n(?:> [^\n]+\n[^\n]+\n)+"
)
PLANNER_EXAMPLE = re.compile(
    r"Crafting commands:\n(?:craft [^\n]+\n)+\nGoal: [^\n]+\.\n"
    r"(?:(?:# Think: [^\n]+|Step \d+: [^\n]+)\n)+Execution Order: \([^\n]+\)\n"
)


def template(kind: str) -> str:
    return TextCraft().prompt_template(kind)


def blocks(text: str) -> tuple[str, list[str]]:
    """The instructions and the demo blocks (each starting with 'Crafting commands:')."""
    body = text[: -len(SUFFIX)] + "\n"
    intro, *parts = body.split("Crafting commands:\n")
    assert intro.endswith("\n\n")
    demos = ["Crafting commands:\n" + part for part in parts]
    for demo in demos[:-1]:  # one blank line between demos
        assert demo.endswith("\n\n")
    return intro, [demo.removesuffix("\n") if demo.endswith("\n\n") else demo for demo in demos]


def parse_task(block: str) -> tuple[list[str], str, list[str]]:
    head, rest = block.split("\n\nGoal: ", 1)
    goal, _, tail = rest.partition("\n")
    assert goal.endswith(".")
    return head.split("\n")[1:], goal[:-1], tail.split("\n")


@pytest.mark.parametrize("kind", ["executor", "planner"])
def test_templates_use_only_task_and_context(kind: str) -> None:
    text = template(kind)
    tpl = string.Template(text)
    assert tpl.is_valid()
    assert sorted(tpl.get_identifiers()) == ["context", "task"]
    assert text.count("$") == 2
    assert text.endswith(SUFFIX)
    filled = tpl.substitute(task="TASK", context="")
    assert filled.endswith("\n\nTASK\n\n")


def test_unknown_prompt_kind() -> None:
    with pytest.raises(KeyError):
        template("critic")


def test_executor_instructions_cover_the_skills() -> None:
    intro, demos = blocks(template("executor"))
    for needle in (
        "get ",
        "craft ",
        "inventory",
        "think:",
        "Task completed!",
        "Task failed!",
        "OK.",
    ):
        assert needle in intro, needle
    assert len(demos) >= 3


def test_executor_demos_have_the_live_layout_and_replay_exactly() -> None:
    _, demos = blocks(template("executor"))
    env = TextCraft()
    full_trajectory = False
    for demo in demos:
        assert EXECUTOR_DEMO.fullmatch(demo), demo
        commands, goal, tail = parse_task(demo)
        assert all(line in COMMANDS for line in commands)
        assert tail[0] == ""  # the empty context line
        lines = tail[1:-1]
        assert tail[-1] == "" and len(lines) % 2 == 0
        root = goal if goal.startswith("craft ") else "craft " + commands[0].split(" using ")[0][8:]
        env.reset(goal=root, commands=commands)
        results = []
        for action_line, observation in zip(lines[::2], lines[1::2], strict=True):
            assert action_line.startswith("> ")
            result = env.step(action_line[2:])
            assert result.observation == observation, action_line
            results.append(result)
        assert lines[-2].startswith("> think:") and lines[-2].endswith("Task completed!")
        if goal == root and env.goal_depth(goal) == 2:
            assert results[-2].done and results[-2].reward == 1.0
            full_trajectory = True
    assert full_trajectory, "no complete trajectory for a depth-2 item"


def test_planner_examples_layout_and_count_arithmetic() -> None:
    intro, examples = blocks(template("planner"))
    for needle in ("Step N:", "Execution Order:", "# Think:", "fetch", "ONE"):
        assert needle in intro, needle
    assert len(examples) == 2
    env = TextCraft()
    for example in examples:
        assert PLANNER_EXAMPLE.fullmatch(example), example
        commands, goal, tail = parse_task(example)
        assert all(line in COMMANDS for line in commands)
        steps = [line for line in tail if line.startswith("Step ")]
        numbers = [int(line.split(":")[0].split()[1]) for line in steps]
        assert numbers == list(range(1, len(steps) + 1))
        order = next(line for line in tail if line.startswith("Execution Order:"))
        assert order == "Execution Order: (" + " AND ".join(f"Step {n}" for n in numbers) + ")"
        # carry the plan out: fetch steps via the scripted solver, craft steps verbatim
        root = goal if goal.startswith("craft ") else "craft " + goal.split(" ", 2)[2]
        env.reset(goal=root, commands=commands)
        result = None
        for step in steps:
            subtask = step.split(": ", 1)[1]
            if subtask.startswith("fetch "):
                _, count, item = subtask.split(" ", 2)
                for action in obtain(env, item, int(count)):
                    assert not env.is_failure(env.step(action).observation)
            else:
                result = env.step(subtask)
                assert not env.is_failure(result.observation), subtask
        if goal.startswith("craft "):
            assert result is not None and result.done
        else:
            _, count, item = goal.split(" ", 2)
            name = BOOK.resolve(item)
            assert name is not None and env.inventory.get(name, 0) >= int(count)


# -- the paper prompt set (profile paper) ---------------------------------------------------------
#: what the agent holds when each paper demo starts (its context line), reached by these actions
PAPER_SETUP = {
    "craft dark oak sign": ["get 2 bamboo", "craft 1 stick using 2 bamboo", "get 2 dark oak logs",
                            "craft 4 dark oak planks using 1 dark oak logs",
                            "craft 4 dark oak planks using 1 dark oak logs"],
    "fetch 2 dark oak logs": ["get 2 bamboo", "craft 1 stick using 2 bamboo"],
    "craft 2 oak planks": ["get 2 bamboo", "craft 1 stick using 2 bamboo"],
}


def paper(kind: str) -> str:
    env = TextCraft()
    env.reset(seed=0, prompts="paper")
    return env.prompt_template(kind)


@pytest.mark.parametrize("kind", ["executor", "planner"])
def test_paper_templates_differ_from_the_default_and_keep_the_placeholders(kind: str) -> None:
    text = paper(kind)
    assert text != template(kind) and text.endswith(SUFFIX)
    assert sorted(string.Template(text).get_identifiers()) == ["context", "task"]


def test_paper_executor_demos_are_the_references_tasks_and_replay_exactly() -> None:
    """Two atomic demonstrations (craft with the ingredients held, fetch) and one trajectory
    (craft 2 oak planks, where the assumption that the ingredients are held is false), each
    replayed through our environment from its context."""
    intro, demos = blocks(paper("executor"))
    for needle in ("get ", "craft ", "inventory", "think: ", "Task completed!", "Task failed!"):
        assert needle in intro or needle in demos[-1], needle
    env = TextCraft()
    goals = []
    for demo in demos:
        demo = demo.split("\n\nThis example shows", 1)[0].split("\n\nNow comes", 1)[0]
        demo = demo.rstrip("\n") + "\n"
        commands, goal, tail = parse_task(demo)
        goals.append(goal)
        assert all(line in COMMANDS for line in commands)
        env.reset(goal="craft dark oak sign", commands=commands)
        for action in PAPER_SETUP[goal]:
            assert not env.is_failure(env.step(action).observation)
        assert tail[0] == env.step("inventory").observation  # the context line
        lines = tail[1:-1]
        assert len(lines) % 2 == 0
        for action_line, observation in zip(lines[::2], lines[1::2], strict=True):
            assert action_line.startswith("> ")
            action = action_line[2:]
            want = "OK." if action.startswith("think:") else env.step(action).observation
            assert observation == want, action_line
        assert "Input assumption" not in demo  # our words, not the reference's
        assert lines[-2].startswith("> think:") and lines[-2].endswith("Task completed!")
    assert goals == list(PAPER_SETUP)


def test_paper_planner_examples_are_the_references_and_their_plans_work() -> None:
    intro, examples = blocks(paper("planner"))
    assert "ONE" in intro and len(examples) == 2
    env = TextCraft()
    goals = []
    for example in examples:
        example = example.split("\n\nNow comes", 1)[0].rstrip("\n") + "\n"
        assert PLANNER_EXAMPLE.fullmatch(example), example
        commands, goal, tail = parse_task(example)
        goals.append(goal)
        env.reset(goal="craft dark oak sign", commands=commands)
        for step in (line.split(": ", 1)[1] for line in tail if line.startswith("Step ")):
            if step.startswith("fetch "):
                _, count, item = step.split(" ", 2)
                for action in obtain(env, item, int(count)):
                    assert not env.is_failure(env.step(action).observation)
            else:
                assert not env.is_failure(env.step(step).observation), step
        if goal.startswith("fetch "):
            _, count, item = goal.split(" ", 2)
            assert env.inventory.get(BOOK.resolve(item) or "", 0) >= int(count)
        else:
            assert "dark_oak_sign" in env.inventory
    assert goals == ["craft dark oak sign", "fetch 6 dark oak planks"]
