"""What every executor shares: the result of one executor run and the ``Executor`` protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from adapt.engine.runtime import Run
    from adapt.engine.tree import Node

THOUGHT_OK = "OK."


@dataclass(slots=True)
class ExecutionResult:
    success: bool  # environment reward > 0, or self-assessed completion
    self_assessed: bool | None  # True: said completed; False: said failed; None: neither
    reward: float
    termination: str  # completed | failed | reward | done | patience | max_steps | ...
    steps: int


def reward_outcome(run: Run, reward: float, done: bool, best_reward: float,
                   steps: int) -> ExecutionResult | None:
    """Record a step's environment reward on ``run``; the result when the step ends the
    executor run (the episode is over, or a reward was earned), else ``None``."""
    if reward > 0:
        run.reward = max(run.reward, reward)
    if done:
        run.episode_done = True
        return ExecutionResult(reward > 0, None, best_reward, "reward" if reward > 0 else "done",
                               steps)
    if reward > 0:
        return ExecutionResult(True, None, best_reward, "reward", steps)
    return None


def parse_line(raw: str) -> str:
    """The one line the model wrote: first non-empty line, without a leading ``>``."""
    for line in raw.splitlines():
        line = line.strip()
        if line.startswith(">"):
            line = line[1:].strip()
        if line:
            return line
    return ""


class Executor(Protocol):
    async def execute(
        self, node: Node, task: str, extra_context: str | None = None
    ) -> ExecutionResult: ...
