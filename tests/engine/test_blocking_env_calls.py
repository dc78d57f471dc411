"""An environment whose steps block (``blocking_steps``: a sandbox, a remote server) is called
in the engine's worker threads for everything it is asked between steps too: the task
observation of a sub-goal, the verdicts, the salient state, checkpoints and rollbacks. The
event loop (other tasks, the lease heartbeat) never waits on it."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.base import StepResult
from adapt.envs.textcraft import TextCraft
from adapt.envs.verdicts import Verification
from adapt.sim import from_spec


class WatchedTextCraft(TextCraft):
    """TextCraft that blocks, and notes which of its members ran on the event loop's thread."""

    blocking_steps: ClassVar[bool] = True

    def __init__(self, loop_thread: threading.Thread) -> None:
        super().__init__()
        self.loop_thread = loop_thread
        self.on_loop: list[str] = []
        self.calls: dict[str, int] = {}

    def _note(self, member: str) -> None:
        self.calls[member] = self.calls.get(member, 0) + 1
        if threading.current_thread() is self.loop_thread:
            self.on_loop.append(member)

    def step(self, action: str) -> StepResult:
        self._note("step")
        return super().step(action)

    def task_observation(self, goal: str) -> str:
        self._note("task_observation")
        return super().task_observation(goal)

    def verify(self, goal: str, *, since: object | None = None) -> Verification:
        self._note("verify")
        return super().verify(goal, since=since)

    def salient_state(self) -> str | None:
        self._note("salient_state")
        return super().salient_state()

    def rolls_back(self) -> bool:
        return True

    def checkpoint(self) -> object:
        self._note("checkpoint")
        return (dict(self._inventory), dict(self._produced))

    def rollback(self, mark: Any) -> None:
        self._note("rollback")
        self._inventory, self._produced = dict(mark[0]), dict(mark[1])


async def test_nothing_a_blocking_environment_is_asked_runs_on_the_event_loop() -> None:
    env = WatchedTextCraft(threading.current_thread())
    result = await run_task(env, {"seed": 11}, RunConfig(d_max=4), from_spec(
        "sim:textcraft?capability=1"), goal="craft comparator", sink=MemorySink())
    assert result.status == "succeeded"
    assert {"step", "task_observation", "verify", "salient_state", "checkpoint",
            "rollback"} <= set(env.calls), env.calls
    assert env.on_loop == []
