"""InterCode-SQL task sets: the Spider dev questions converted to MySQL by InterCode.

The data is read from a path the user gives (the directory holding ``ic_spider_dev.json``, or
that file itself); this package ships none of it. A task's ``config`` is what
``InterCodeSQL().reset(**task.config)`` takes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from adapt.errors import InvalidConfig, UserError

Hardness = Literal["easy", "medium", "hard", "extra"]
HARDNESS: tuple[str, ...] = ("easy", "medium", "hard", "extra")

#: the task file inside the data directory
TASK_FILE = "ic_spider_dev.json"


@dataclass(frozen=True, slots=True)
class Task:
    """One InterCode-SQL task."""

    #: stable id, e.g. ``intercode_sql/dev/17`` (the index in the task file)
    id: str
    #: the database name, e.g. ``poker_player``
    db: str
    #: the natural-language question (the goal)
    question: str
    #: the reference SQL
    gold: str
    #: ``easy``, ``medium``, ``hard`` or ``extra`` (Spider's classification)
    hardness: str
    #: table -> column names, as the task file lists them
    tables: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def config(self) -> dict[str, Any]:
        """``environment_config`` for this task: ``env.reset(**task.config)``."""
        return {"db": self.db, "question": self.question, "gold": self.gold}


def task_file(path: str | Path) -> Path:
    """The task file at ``path`` (the file itself or the directory holding it)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / TASK_FILE
    if not p.is_file():
        raise UserError(
            f"intercode_sql: no task file at {p}; give the InterCode-SQL data directory "
            f"(holding {TASK_FILE}) or the file itself"
        )
    return p


def _load(p: Path) -> list[Task]:
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"intercode_sql: cannot read the task file {p}: {exc}") from exc
    if not isinstance(raw, list):
        raise UserError(f"intercode_sql: {p} must hold a JSON list of tasks")
    out: list[Task] = []
    for index, item in enumerate(raw):
        try:
            tables = item.get("db_tables") or {}
            out.append(
                Task(
                    id=f"intercode_sql/dev/{index}",
                    db=str(item["db"]),
                    question=str(item["query"]),
                    gold=str(item["gold"]),
                    hardness=str(item["hardness"]),
                    tables={str(k): [str(c) for c in v] for k, v in dict(tables).items()},
                )
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise UserError(
                f"intercode_sql: task {index} of {p} lacks db, query, gold or hardness ({exc})"
            ) from exc
    return out


def tasks(path: str | Path, hardness: str | None = None, db: str | None = None) -> list[Task]:
    """The tasks of the task file at ``path``, in file order, optionally only those of one
    ``hardness`` (``easy``, ``medium``, ``hard``, ``extra``) and/or one database ``db``."""
    if hardness is not None and hardness not in HARDNESS:
        raise InvalidConfig(
            f"intercode_sql: unknown hardness {hardness!r}; use one of {', '.join(HARDNESS)}"
        )
    return [
        t
        for t in _load(task_file(path))
        if (hardness is None or t.hardness == hardness) and (db is None or t.db == db)
    ]
