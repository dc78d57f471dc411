"""A Bash command runs off the event loop: while it (and the gold command at ``submit``) runs,
other coroutines on the same loop (a worker's lease heartbeat, other tasks) keep running."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from pathlib import Path

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.base import blocks, start_episode_async, step_async
from adapt.envs.intercode_bash import InterCodeBash
from adapt.llm.testing import ScriptedModel

SLOW = {"fs": 4, "question": "Wait a second and a half, then say done.",
        "gold": "sleep 1.5; echo done"}


async def test_commands_and_the_reward_leave_the_loop_running(bash_env: InterCodeBash) -> None:
    beats: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        while not stop.is_set():
            beats.append(time.monotonic())
            await asyncio.sleep(0.05)

    ticker = asyncio.create_task(heartbeat())
    model = ScriptedModel(["execute[sleep 1.5; echo done]", "submit"])
    started = time.monotonic()
    try:
        result = await run_task(bash_env, SLOW, RunConfig(strategy="react", d_max=1), model,
                                sink=MemorySink())
    finally:
        stop.set()
        await ticker
    took = time.monotonic() - started
    assert result.reward == 1.0 and model.remaining == 0
    assert took >= 3.0  # the agent's command, then the gold command in the reward
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    assert len(beats) > took / 0.05 * 0.5, len(beats)
    assert max(gaps) < 0.5, f"the loop was blocked for {max(gaps):.2f}s"
    assert blocks(bash_env)


async def test_two_tasks_overlap_their_sandbox_time(bash_data: Path, bash_cache: Path,
                                                    bash_layers: object) -> None:
    envs = [InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10) for _ in range(2)]
    started = time.monotonic()
    try:
        results = await asyncio.gather(*(
            run_task(env, SLOW, RunConfig(strategy="react", d_max=1),
                     ScriptedModel(["execute[sleep 1.5; echo done]", "submit"]),
                     sink=MemorySink())
            for env in envs))
    finally:
        for env in envs:
            env.close()
    assert [r.reward for r in results] == [1.0, 1.0]
    assert time.monotonic() - started < 5.5  # one after the other: >= 6 s


async def test_commands_leave_the_loops_default_thread_pool_free(
        bash_data: Path, bash_cache: Path, bash_layers: object) -> None:
    """More commands at once than asyncio's default pool has threads: other ``to_thread`` work
    of the worker (dispatching, webhooks) still runs at once."""
    busy = min(32, (os.cpu_count() or 1) + 4) + 2
    envs = [InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10)
            for _ in range(busy)]
    try:
        for env in envs:
            await start_episode_async(env, SLOW)
        steps = [asyncio.create_task(step_async(env, "execute[sleep 2]")) for env in envs]
        await asyncio.sleep(0.5)  # every command is running
        started = time.monotonic()
        await asyncio.to_thread(time.sleep, 0)
        waited = time.monotonic() - started
        results = await asyncio.gather(*steps)
    finally:
        for env in envs:
            env.close()
    assert all(r.observation == "(no output)" for r in results)
    assert waited < 0.5, f"to_thread waited {waited:.2f}s behind the commands"
