"""The ``environment_config`` model of ALFWorld (validated by ``reset`` and by the API)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from adapt.envs.alfworld.assets import SHORT_TASK_TYPES, TASK_TYPES, TaskType

#: generated game sets (deterministic, balanced across the six task types)
GeneratedSplit = Literal["dev", "test"]
#: the official ALFWorld splits (``$ALFWORLD_DATA/json_2.1.1/<split>``)
OfficialSplit = Literal["train", "valid_seen", "valid_unseen"]


class ALFWorldConfig(BaseModel):
    """Which ALFWorld game to play. Give exactly one source:

    - ``seed`` (with optional ``task_type`` and ``scene``): a generated game, deterministic per
      seed, validated by the planner;
    - ``split`` and ``index``: the ``index``-th game of a generated set (``dev``: 30 games,
      ``test``: 120 games, both balanced across the six task types) or of an official ALFWorld
      split (``valid_unseen``: what the papers report; needs the game files, see
      ``data_dir``);
    - ``game_path``: one ALFWorld game file (``game.tw-pddl``) or the folder holding it.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={"examples": [{"seed": 0}, {"seed": 1, "task_type": "clean"}]},
    )

    seed: int | None = Field(
        default=None, ge=0, description="Generate a game from this seed. Excludes split and "
        "game_path.", examples=[0],
    )
    task_type: TaskType | None = Field(
        default=None,
        description=(
            "With seed: the task type, one of pick, clean, heat, cool, examine (look at an "
            "object under a lamp), pick_two (ALFWorld's names such as "
            "pick_clean_then_place_in_recep work too). Default: picked by the seed."
        ),
        examples=["clean"],
    )
    scene: int | None = Field(
        default=None,
        description=(
            "With seed: the FloorPlan to set the game in (1-30 kitchens, 201-230 living rooms, "
            "301-330 bedrooms, 401-430 bathrooms). Default: picked by the seed among the scenes "
            "that fit the task type."
        ),
    )
    split: GeneratedSplit | OfficialSplit | None = Field(
        default=None,
        description=(
            "A game set: dev or test (generated), or train, valid_seen, valid_unseen (the "
            "official ALFWorld games; need data_dir or $ALFWORLD_DATA). Use with index."
        ),
        examples=["test"],
    )
    index: int = Field(default=0, ge=0, description="With split: which game of the set (0-based).")
    game_path: str | None = Field(
        default=None,
        description="An ALFWorld game: a game.tw-pddl file or the trial folder holding it "
        "(through the service: only inside the operator's ADAPT_PATH_ROOTS).",
        json_schema_extra={"server_path": True},
    )
    data_dir: str | None = Field(
        default=None,
        description=(
            "With an official split: the ALFWorld data folder (holding json_2.1.1/), default "
            "$ALFWORLD_DATA (through the service: only inside the operator's ADAPT_PATH_ROOTS)."
        ),
        json_schema_extra={"server_path": True},
    )
    near_miss: bool | Literal["bleu"] = Field(
        default=False,
        description=(
            "Map a command that is not admissible to an admissible one: true: the closest when "
            "it is close enough (difflib ratio 0.85 or more); 'bleu': the one with the highest "
            "BLEU against it when above 0.01, as StateFlow's ALFWorld code (set by profile "
            "'paper' for the stateflow executor). Off by default."
        ),
    )

    prompts: Literal["default", "paper"] = Field(
        default="default",
        description=(
            "Prompt set: 'default' (the project's prompts) or 'paper' (the ADaPT paper's "
            "structure and demonstration tasks; set by profile 'paper')."
        ),
    )
    rollback: bool = Field(
        default=False,
        description=(
            "Roll a failed sub-task back, as ADaPT's ALFWorld runs do: before each sub-task the "
            "game is reset and only the actions of the sub-tasks that succeeded are replayed. "
            "Set by profile 'paper'."
        ),
    )

    @field_validator("task_type", mode="before")
    @classmethod
    def _short_name(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip().lower()
            return SHORT_TASK_TYPES.get(text, text)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> ALFWorldConfig:
        given = [name for name in ("seed", "split", "game_path") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of seed (a generated game), split with index (a game set) or "
                "game_path (an ALFWorld game file), e.g. {'seed': 3, 'task_type': 'clean'}, "
                "{'split': 'test', 'index': 0} or {'game_path': '.../game.tw-pddl'}"
                + (f"; got {', '.join(given)}" if given else "")
            )
        if self.seed is None and (self.task_type is not None or self.scene is not None):
            raise ValueError("task_type and scene go with seed (a generated game)")
        if self.data_dir is not None and self.split not in ("train", "valid_seen", "valid_unseen"):
            raise ValueError("data_dir goes with an official split (train, valid_seen, "
                             "valid_unseen)")
        return self


__all__ = ["TASK_TYPES", "ALFWorldConfig", "GeneratedSplit", "OfficialSplit"]
