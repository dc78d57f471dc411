"""Where games come from: generated sets, the official ALFWorld games, single game files.

Generated sets (deterministic, balanced across the six task types, game ``i`` has task type
``TASK_ORDER[i % 6]`` and seed ``base + i``):

- ``dev``: 30 games (5 per type) set in ALFRED's training scenes;
- ``test``: 120 games (20 per type) set in ALFRED's held-out scenes (FloorPlan 1-6, 201-206,
  301-306, 401-406), the scenes ALFWorld's unseen split plays in.

Official games: ALFWorld's ``alfworld-download`` puts them under ``$ALFWORLD_DATA/json_2.1.1/``
as ``<split>/<task folder>/<trial>/game.tw-pddl`` next to ``traj_data.json``. A split's games
are those files, sorted by path, without the ``movable`` and ``Sliced`` tasks and the games
marked unsolvable, exactly the selection ALFWorld's ``AlfredTWEnv`` makes (``valid_unseen``:
134 games, what ADaPT, StateFlow and StateAct report on).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from adapt.envs.alfworld import assets
from adapt.envs.alfworld.config import ALFWorldConfig
from adapt.envs.alfworld.game import Game
from adapt.envs.alfworld.generator import generate
from adapt.errors import InvalidConfig

#: the order task types take in generated sets
TASK_ORDER: tuple[str, ...] = ("pick", "clean", "heat", "cool", "examine", "pick_two")
#: generated set -> (first seed, games per task type)
GENERATED_SETS: dict[str, tuple[int, int]] = {"dev": (100_000, 5), "test": (200_000, 20)}
OFFICIAL_SPLITS = ("train", "valid_seen", "valid_unseen")
#: the environment variable ALFWorld itself reads for its data folder
DATA_ENV = "ALFWORLD_DATA"


@dataclass(frozen=True, slots=True)
class GameRef:
    """One game of a set: its config for ``ALFWorld.reset`` and its task type."""

    id: str
    task_type: str
    config: dict[str, Any]


def held_out_scenes() -> tuple[int, ...]:
    """ALFRED's held-out scenes (``constants.TEST_SCENE_NUMBERS``)."""
    return tuple(assets.constants().TEST_SCENE_NUMBERS)


def training_scenes() -> tuple[int, ...]:
    held = set(held_out_scenes())
    return tuple(s for s in assets.scenes() if s not in held)


def _set_scenes(split: str) -> tuple[int, ...]:
    return held_out_scenes() if split == "test" else training_scenes()


def generated_set(split: str) -> list[GameRef]:
    """The games of generated set ``split`` (``dev`` or ``test``), in order."""
    if split not in GENERATED_SETS:
        raise InvalidConfig(f"alfworld: unknown generated set {split!r}; use dev or test")
    per_type = GENERATED_SETS[split][1]
    refs = []
    for i in range(per_type * len(TASK_ORDER)):
        kind = TASK_ORDER[i % len(TASK_ORDER)]
        refs.append(GameRef(f"alfworld/{split}/{i}", kind, {"split": split, "index": i}))
    return refs


def generated_game(split: str, index: int) -> Game:
    """Game ``index`` of generated set ``split``."""
    refs = generated_set(split)
    if index >= len(refs):
        raise InvalidConfig(f"alfworld: set {split!r} has {len(refs)} games (index 0-"
                            f"{len(refs) - 1}), got index {index}")
    base, _ = GENERATED_SETS[split]
    return generate(base + index, refs[index].task_type, None, _set_scenes(split))


def data_root(data_dir: str | None, split: str) -> Path:
    """The folder holding the official ``split`` (``<data>/json_2.1.1/<split>``)."""
    given = data_dir or os.environ.get(DATA_ENV)
    if not given:
        raise InvalidConfig(
            f"alfworld: the official {split!r} games need ALFWorld's data folder: set data_dir "
            f"in the environment config or the {DATA_ENV} environment variable to the folder "
            "alfworld-download filled (it holds json_2.1.1/). Without it, use the generated "
            "games: {'split': 'test', 'index': 0} or {'seed': 0}"
        )
    base = Path(given).expanduser()
    for candidate in (base / "json_2.1.1" / split, base / split):
        if candidate.is_dir():
            return candidate
    raise InvalidConfig(f"alfworld: no {split!r} games under {base} (looked for "
                        f"{base / 'json_2.1.1' / split} and {base / split})")


@lru_cache(maxsize=8)
def official_games(root: Path) -> tuple[Path, ...]:
    """The playable games under ``root``, sorted, as ALFWorld's ``AlfredTWEnv`` selects them."""
    found = []
    for path in sorted(root.glob("**/game.tw-pddl")):
        text = str(path)
        if "movable" in text or "Sliced" in text:
            continue
        try:
            solvable = json.loads(path.read_text(encoding="utf-8")).get("solvable", True)
        except (OSError, ValueError):
            continue
        if solvable is False:
            continue
        found.append(path)
    return tuple(found)


def official_game(split: str, index: int, data_dir: str | None) -> Game:
    games = official_games(data_root(data_dir, split))
    if not games:
        raise InvalidConfig(f"alfworld: found no playable game.tw-pddl files for {split!r}")
    if index >= len(games):
        raise InvalidConfig(f"alfworld: split {split!r} has {len(games)} games (index 0-"
                            f"{len(games) - 1}), got index {index}")
    return load_game_file(games[index])


def task_type_of(folder: Path) -> str | None:
    traj = folder / "traj_data.json"
    name: str | None = None
    try:
        name = json.loads(traj.read_text(encoding="utf-8")).get("task_type")
    except (OSError, ValueError):
        name = None
    if not name:  # e.g. .../pick_clean_then_place_in_recep-Mug-None-CoffeeMachine-10/trial_...
        for part in reversed(folder.parts):
            head = part.split("-", 1)[0]
            if head in assets.SHORT_TASK_TYPES:
                name = head
                break
    return assets.SHORT_TASK_TYPES.get(name or "")


@cache
def _read_game(path: Path, mtime: float) -> Game:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidConfig(f"alfworld: cannot read the game file {path}: {exc}") from None
    except ValueError:
        raise InvalidConfig(f"alfworld: {path} is not an ALFWorld game file (not JSON)") from None
    needed = ("pddl_domain", "pddl_problem", "grammar")
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in needed):
        raise InvalidConfig(f"alfworld: {path} is not an ALFWorld game file (it needs "
                            f"{', '.join(needed)})")
    walkthrough = data.get("walkthrough") or []
    return Game(
        pddl_domain=data["pddl_domain"], pddl_problem=data["pddl_problem"],
        grammar=data["grammar"], task_type=task_type_of(path.parent),
        walkthrough=tuple(str(c) for c in walkthrough if isinstance(c, str)), source=str(path),
    )


def load_game_file(path: str | Path) -> Game:
    """An ALFWorld game from its ``game.tw-pddl`` file (or the folder holding it)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "game.tw-pddl"
    if not p.is_file():
        raise InvalidConfig(f"alfworld: no game file at {p} (give a game.tw-pddl file or the "
                            "folder holding it)")
    return _read_game(p.resolve(), p.stat().st_mtime)


def resolve(config: ALFWorldConfig) -> Game:
    """The game a (validated) config asks for."""
    if config.seed is not None:
        return generate(config.seed, config.task_type, config.scene)
    if config.game_path is not None:
        return load_game_file(config.game_path)
    if config.split is None:  # the config model requires one source
        raise ValueError("an ALFWorld config needs a seed, a game_path or a split")
    if config.split in GENERATED_SETS:
        return generated_game(config.split, config.index)
    return official_game(config.split, config.index, config.data_dir)
