"""ADaPT's ALFWorld semantics between sub-tasks (profile paper): a failed executor attempt is
rolled back (the game is reset and only the actions of successful sub-tasks are replayed), with
the real ALFWorld engine and scripted models."""

from __future__ import annotations

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.alfworld import ALFWorld
from adapt.llm.testing import ScriptedModel

FAIL = "think: This did not work. Task failed!"
DONE = "think: Task completed!"
SEED = {"seed": 5, "task_type": "clean"}


async def play(rollback: bool) -> tuple[ALFWorld, list[str], MemorySink]:
    env = ALFWorld()
    env.reset(**SEED)
    walk = env.walkthrough()
    first, second = walk[0], walk[1]
    executor = [
        first, second, FAIL,   # root: two actions, then gives up -> rolled back
        first, DONE,           # sub-task 1 succeeds: kept
        second, FAIL,          # sub-task 2 fails: rolled back to after sub-task 1
    ]
    planner = ["Step 1: go there\nStep 2: take it\nExecution Order: (Step 1 AND Step 2)"]
    sink = MemorySink()
    result = await run_task(env, {**SEED, "rollback": rollback}, RunConfig(d_max=2),
                            ScriptedModel(executor), ScriptedModel(planner), sink=sink)
    assert result.status == "failed"
    return env, walk, sink


async def test_a_failed_subtask_is_rolled_back() -> None:
    env, walk, sink = await play(rollback=True)
    try:
        assert env.rolls_back()
        assert env.actions == [walk[0]]  # only the successful sub-task's action is left
        fresh = ALFWorld()
        try:
            fresh.reset(**SEED)
            fresh.step(walk[0])
            assert env.step("inventory").observation == fresh.step("inventory").observation
            assert env.step("look").observation == fresh.step("look").observation
        finally:
            fresh.close()
        # the executor of sub-task 2 was told the last successful action and its observation
        assert sink.nodes[3].context_in is not None and f"> {walk[0]}" in sink.nodes[3].context_in
    finally:
        env.close()


async def test_without_rollback_the_actions_stay() -> None:
    env, walk, _ = await play(rollback=False)
    try:
        assert not env.rolls_back()
        assert env.actions == [walk[0], walk[1], walk[0], walk[1]]
    finally:
        env.close()


def test_rollback_replays_the_log_up_to_the_mark() -> None:
    env = ALFWorld()
    try:
        env.reset(seed=2, task_type="pick", rollback=True)
        walk = env.walkthrough()
        env.step(walk[0])
        mark = env.checkpoint()
        state = env.salient_state()
        looked = env.step("look").observation
        for command in walk[1:-1]:
            env.step(command)
        env.rollback(mark)
        assert env.actions == [walk[0]]
        assert env.salient_state() == state
        assert env.step("look").observation == looked
        for command in walk[1:]:
            result = env.step(command)
        assert result.done and result.reward == 1.0  # the game goes on from the mark
    finally:
        env.close()
