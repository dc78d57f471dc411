"""One ALFWorld game: the ``.tw-pddl`` document and what we know about it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_TASK = re.compile(r"Your task is to: (.+)")


@dataclass(frozen=True)
class Game:
    """A game the engine can play: ALFWorld's ``.tw-pddl`` document plus its metadata."""

    pddl_domain: str = field(repr=False)
    pddl_problem: str = field(repr=False)
    grammar: str = field(repr=False)
    #: our short task type (``pick``, ``clean``, ...), ``None`` when unknown
    task_type: str | None
    #: the planner's (generated) or the file's (official) solution, as commands
    walkthrough: tuple[str, ...]
    #: where it came from: ``generated seed=3 task_type=clean scene=7`` or a file path
    source: str
    #: the FloorPlan number, when known
    scene: int | None = None

    def document(self) -> dict[str, Any]:
        """The ``.tw-pddl`` JSON document ALFWorld (and ``reset(game_path=...)``) reads."""
        return {
            "pddl_domain": self.pddl_domain,
            "grammar": self.grammar,
            "pddl_problem": self.pddl_problem,
            "solvable": True,
            "walkthrough": list(self.walkthrough),
        }


def task_sentence(observation: str) -> str:
    """``put a clean mug in coffeemachine`` from an intro containing ``Your task is to: ...``."""
    m = _TASK.search(observation)
    if m is None:
        return ""
    return m.group(1).strip().rstrip(".").strip()
