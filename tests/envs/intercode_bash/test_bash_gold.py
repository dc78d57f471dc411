"""Every gold command of the 200 tasks scores 1.0 against itself in its own file system.

A short subset always runs; the whole set is marked slow. The few tasks whose output depends on
the moment or on the host (the clock, the host disk's free space) are checked on their file
system parts only; the docs list them with the reason.
"""

from __future__ import annotations

import pytest

from adapt.envs.intercode_bash import InterCodeBash, tasks
from tests.support.bash_data import DATA

#: task id -> why its output can differ between two runs a moment apart
UNSTABLE_OUTPUT = {
    "intercode_bash/fs1/30": "counts every file from /, /proc included, whose entries depend on "
    "which processes of the pipeline have started yet",
    "intercode_bash/fs1/55": "greps every file from / (the /proc of the sandbox included): runs "
    "into the 10 s limit at a varying point",
    "intercode_bash/fs2/36": "prints the free space of the host disk (in MB)",
    "intercode_bash/fs2/42": "prints the current time",
    "intercode_bash/fs3/44": "prints the used and free space of the host disk",
    "intercode_bash/fs3/50": "prints the used share of the host disk",
    "intercode_bash/fs4/25": "prints the load average, which changes every few seconds",
}
#: tasks always run (a few per file system, incl. ones that change files)
QUICK = {"intercode_bash/fs1/0", "intercode_bash/fs1/15", "intercode_bash/fs1/44",
         "intercode_bash/fs2/5", "intercode_bash/fs2/44", "intercode_bash/fs2/45",
         "intercode_bash/fs3/11", "intercode_bash/fs3/37", "intercode_bash/fs3/56",
         "intercode_bash/fs4/6", "intercode_bash/fs4/24"}


def _all_tasks() -> list[object]:
    if not DATA.is_dir():
        return []
    return [
        pytest.param(t, id=t.id.split("/", 1)[1],
                     marks=() if t.id in QUICK else (pytest.mark.slow,))
        for t in tasks(DATA)
    ]


def _gold(task: object) -> str:
    gold = task.config["gold"]  # type: ignore[attr-defined]
    return gold if isinstance(gold, str) else ";".join(gold)


@pytest.mark.parametrize("task", _all_tasks())
def test_gold_scores_one(task: object, bash_env: InterCodeBash) -> None:
    bash_env.reset(**task.config)  # type: ignore[attr-defined]
    bash_env.step(f"execute[{_gold(task)}]")
    result = bash_env.step("submit")
    assert result.done
    parts = result.info["reward_parts"]
    if task.id in UNSTABLE_OUTPUT:  # type: ignore[attr-defined]
        assert parts["file_diff"] == 0.33 and parts["file_changes"] == 0.33, result.info
        return
    assert result.reward == 1.0, result.info
    assert result.info["success"] is True


def test_there_are_200_tasks(bash_data: object) -> None:
    sets = {name: len(tasks(DATA, name)) for name in ("fs1", "fs2", "fs3", "fs4", "all")}
    assert sets == {"fs1": 60, "fs2": 53, "fs3": 60, "fs4": 27, "all": 200}
