"""InterCode-Bash task sets: the 200 NL2Bash requests on four file systems.

The data is read from a path the user gives (the directory holding ``nl2bash_fs_1.json`` ...
``nl2bash_fs_4.json`` and the setup scripts); this package ships none of it. Task sets: ``fs1``
.. ``fs4`` (one file system each) and ``all`` (the 200 in order). A task's ``config`` is what
``InterCodeBash().reset(**task.config)`` takes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapt.errors import InvalidConfig, UserError

#: the task sets the bench and ``tasks`` accept
TASK_SETS: tuple[str, ...] = ("fs1", "fs2", "fs3", "fs4", "all")


@dataclass(frozen=True, slots=True)
class Task:
    """One InterCode-Bash task."""

    #: stable id, e.g. ``intercode_bash/fs1/7`` (the index in the task file)
    id: str
    #: the file system (1-4)
    fs: int
    #: the request (the goal)
    question: str
    #: the gold command or commands
    gold: str | tuple[str, ...]

    @property
    def config(self) -> dict[str, Any]:
        """``environment_config`` for this task: ``env.reset(**task.config)``."""
        gold: str | list[str] = self.gold if isinstance(self.gold, str) else list(self.gold)
        return {"fs": self.fs, "question": self.question, "gold": gold}


def task_file(data_dir: str | Path, fs: int) -> Path:
    p = Path(data_dir).expanduser() / f"nl2bash_fs_{fs}.json"
    if not p.is_file():
        raise UserError(
            f"intercode_bash: no task file {p}; give the InterCode-Bash data directory "
            "(holding nl2bash_fs_1.json ... nl2bash_fs_4.json and the setup scripts)"
        )
    return p


def _load(data_dir: str | Path, fs: int) -> list[Task]:
    p = task_file(data_dir, fs)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"intercode_bash: cannot read the task file {p}: {exc}") from exc
    if not isinstance(raw, list):
        raise UserError(f"intercode_bash: {p} must hold a JSON list of tasks")
    out: list[Task] = []
    for index, item in enumerate(raw):
        try:
            gold = item["gold"]
            out.append(Task(
                id=f"intercode_bash/fs{fs}/{index}",
                fs=fs,
                question=str(item["query"]),
                gold=str(gold) if isinstance(gold, str) else tuple(str(g) for g in gold),
            ))
        except (KeyError, TypeError) as exc:
            raise UserError(f"intercode_bash: task {index} of {p} lacks query or gold ({exc})"
                            ) from exc
    return out


def tasks(data_dir: str | Path, task_set: str = "all") -> list[Task]:
    """The tasks of ``task_set`` (``fs1`` .. ``fs4`` or ``all``), in file order."""
    if task_set not in TASK_SETS:
        raise InvalidConfig(
            f"intercode_bash: unknown task set {task_set!r}; use one of {', '.join(TASK_SETS)}"
        )
    numbers = (1, 2, 3, 4) if task_set == "all" else (int(task_set[2:]),)
    return [t for fs in numbers for t in _load(data_dir, fs)]
