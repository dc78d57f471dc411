"""What every executor shares: the result of one executor run and the ``Executor`` protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from adapt.engine.tree import Node, Step
    from adapt.envs.verdicts import Verification

THOUGHT_OK = "OK."


@dataclass(slots=True, frozen=True)
class ExecuteOptions:
    """What a strategy may change for one executor run (``None``: the configured value)."""

    max_steps: int | None = None
    temperature: float | None = None
    extra_context: str | None = None  # appended to the propagated context


@dataclass(slots=True)
class ExecutionResult:
    success: bool  # environment reward > 0, or self-assessed completion
    self_assessed: bool | None  # True: said completed; False: said failed; None: neither
    reward: float
    termination: str  # completed | failed | reward | done | patience | max_steps | ...
    steps: int  # how many steps were recorded
    trajectory: list[Step] = field(default_factory=list)  # those steps, in order
    #: the executor's own outcome before verification (None: it made none, the environment
    #: confirmed the goal first)
    claim: bool | None = None
    #: the environment's verdict on the goal when the run ended (None: not checked)
    checked: Verification | None = None


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
    """Runs one (sub-)task on ``node``; ``options`` are a strategy's changes for this run."""

    async def execute(
        self, node: Node, task: str, options: ExecuteOptions | None = None
    ) -> ExecutionResult: ...
