"""InterCode-SQL task sets read from the data directory."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from adapt.envs.intercode_sql import InterCodeSQLConfig, tasks
from adapt.errors import InvalidConfig, UserError


def test_all_tasks(data_dir: Path) -> None:
    every = tasks(data_dir)
    assert len(every) == 1034
    assert every == tasks(data_dir / "ic_spider_dev.json")
    assert Counter(t.hardness for t in every) == {
        "easy": 248,
        "medium": 446,
        "hard": 174,
        "extra": 166,
    }
    first = every[0]
    assert first.id == "intercode_sql/dev/0" and first.db == "poker_player"
    assert first.config == {"db": first.db, "question": first.question, "gold": first.gold}
    InterCodeSQLConfig.model_validate(first.config)
    assert "poker_player" in first.tables
    assert len({t.id for t in every}) == 1034


def test_filters(data_dir: Path) -> None:
    hard = tasks(data_dir, hardness="hard")
    assert len(hard) == 174 and {t.hardness for t in hard} == {"hard"}
    singer = tasks(data_dir, db="singer")
    assert singer and {t.db for t in singer} == {"singer"}
    both = tasks(data_dir, hardness="easy", db="singer")
    assert both == [t for t in singer if t.hardness == "easy"]
    assert tasks(data_dir, db="no_such_db") == []


def test_errors(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="hardness"):
        tasks(data_dir, hardness="impossible")
    with pytest.raises(UserError, match="no task file"):
        tasks(tmp_path)
    bad = tmp_path / "ic_spider_dev.json"
    bad.write_text('[{"db": "x"}]')
    with pytest.raises(UserError, match="task 0"):
        tasks(tmp_path)
