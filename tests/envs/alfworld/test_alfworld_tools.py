"""ALFWorld through the tools executor on the real engine: each task type's walkthrough,
written as tool calls, wins the game, and every tool runs."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.envs.alfworld import ALFWorld
from adapt.llm.base import ToolCall
from adapt.llm.testing import tool_call
from tests.support.toolruns import check_calls_became_actions, every_tool, run_tools

#: a walkthrough command -> the tool call that stands for it
_COMMANDS = [
    (re.compile(r"go to (.+)"), "go_to", ("receptacle",)),
    (re.compile(r"take (.+) from (.+)"), "take", ("object", "receptacle")),
    (re.compile(r"move (.+) to (.+)"), "put", ("object", "receptacle")),
    (re.compile(r"(clean|heat|cool) (.+) with (.+)"), None, ("object", "receptacle")),
    (re.compile(r"(open|close) (.+)"), None, ("receptacle",)),
    (re.compile(r"use (.+)"), "use", ("object",)),
]


def as_call(command: str) -> ToolCall:
    for pattern, name, fields in _COMMANDS:
        m = pattern.fullmatch(command)
        if m is None:
            continue
        groups = m.groups()
        if name is None:
            name, groups = groups[0], groups[1:]
        return tool_call(name, dict(zip(fields, groups, strict=True)))
    raise AssertionError(f"no tool for {command!r}")


@pytest.mark.parametrize("task_type", ["pick", "clean", "heat", "cool", "examine"])
async def test_a_walkthrough_as_tool_calls_wins(task_type: str) -> None:
    config = {"seed": 11, "task_type": task_type}
    env = ALFWorld()
    env.reset(**config)
    calls = [as_call(c) for c in env.walkthrough()]
    env.close()
    result, sink, _ = await run_tools(ALFWorld(), config, calls)
    assert result.status == "succeeded" and result.reward == 1.0, task_type
    assert len(sink.steps[1]) == len(calls)
    check_calls_became_actions(ALFWorld, config, sink)


async def test_every_tool_runs() -> None:
    config = {"seed": 11}
    calls = every_tool(ALFWorld(), config)
    assert len(calls) == 12
    result, sink, _ = await run_tools(ALFWorld(), config, [*calls, tool_call("task_failed")],
                                      patience=None)  # most do nothing in this room
    assert result.error is None and len(sink.steps[1]) == 13
    check_calls_became_actions(ALFWorld, config, sink)
