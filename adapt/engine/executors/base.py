"""What every executor shares: the result of one executor run and the ``Executor`` protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from adapt.engine.claim_checks import Watch
    from adapt.engine.tree import Node, Step, Termination
    from adapt.envs.verdicts import Verification
    from adapt.llm.base import ChatModel

THOUGHT_OK = "OK."


@dataclass(slots=True, frozen=True)
class ExecuteOptions:
    """The choices for one executor run (``None``: the configured value). A strategy sets the
    first three; the node runner adds the model (a cascade attempt's) and the watch
    (verification). Nothing else about a run is changed for one executor run."""

    max_steps: int | None = None
    temperature: float | None = None
    extra_context: str | None = None  # appended to the propagated context
    #: the model the executor calls (``None``: the run's default executor model)
    model: ChatModel | None = None
    #: the node whose goal the environment checks after every turn (``None``: not checked)
    watch: Watch | None = None


@dataclass(slots=True)
class ExecutionResult:
    """What one executor run reports. ``reward`` and ``done`` are the environment's answers
    during the run; the node runner folds them into the run's state (``Run.fold``)."""

    success: bool  # environment reward > 0, or self-assessed completion
    self_assessed: bool | None  # True: said completed; False: said failed; None: neither
    reward: float  # the best reward of the run (0.0: none)
    termination: Termination  # why the run ended
    steps: int  # how many steps were recorded
    trajectory: list[Step] = field(default_factory=list)  # those steps, in order
    #: the executor's own outcome before verification (None: it made none, the environment
    #: confirmed the goal first)
    claim: bool | None = None
    #: the environment's verdict on the goal when the run ended (None: not checked)
    checked: Verification | None = None
    #: the environment ended the episode during the run
    done: bool = False


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
