"""The ``environment_config`` model of TextCraft (validated by ``reset`` and by the API)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TextCraftConfig(BaseModel):
    """Which TextCraft game to play.

    Give exactly one source:

    - ``seed``: generate a game (a random goal of recipe depth >= 2, its recipe tree and up to 10
      distractor commands), deterministic per seed;
    - ``goal``: play that goal; with ``commands`` the game is loaded verbatim (e.g. a published
      task), without them the commands are generated deterministically for the goal.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int | None = Field(
        default=None,
        description="Generate the game from this seed (goal and commands). Excludes goal.",
        examples=[3],
    )
    goal: str | None = Field(
        default=None,
        description=(
            "The goal, e.g. 'craft polished granite stairs' (the 'craft ' prefix is optional). "
            "Excludes seed."
        ),
        examples=["craft beehive", "craft polished granite stairs"],
    )
    commands: list[str] | None = Field(
        default=None,
        description=(
            "Crafting command lines exactly as shown in the game, e.g. "
            "'craft 4 polished granite stairs using 6 polished granite'. Requires goal; "
            "omit to generate them."
        ),
        examples=[
            [
                "craft 4 polished granite stairs using 6 polished granite",
                "craft 4 polished granite using 4 granite",
                "craft 1 granite using 1 diorite, 1 quartz",
                "craft 2 diorite using 2 quartz, 2 cobblestone",
            ]
        ],
    )

    prompts: Literal["default", "small", "paper"] = Field(
        default="default",
        description=(
            "Prompt set: 'default' (the project's few-shot prompts), 'paper' (the ADaPT paper's "
            "structure and demonstration tasks; set by profile 'paper') or 'small' (shorter "
            "few-shot prompts for small completion models such as local:smollm2)."
        ),
        examples=["default", "paper", "small"],
    )

    @model_validator(mode="after")
    def _one_source(self) -> TextCraftConfig:
        if (self.seed is None) == (self.goal is None):
            raise ValueError(
                "give exactly one of seed (generate a game) or goal (play that goal), "
                "e.g. {'seed': 3} or {'goal': 'craft beehive'}"
            )
        if self.commands is not None and self.goal is None:
            raise ValueError(
                "commands need a goal, e.g. {'goal': 'craft beehive', 'commands': [...]}"
            )
        return self
