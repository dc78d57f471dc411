"""The ``environment_config`` model of InterCode-SQL (validated by ``reset`` and by the API)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class InterCodeSQLConfig(BaseModel):
    """One InterCode-SQL task: a question about one database and the gold query answering it."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "db": "poker_player",
                    "question": "How many poker players are there?",
                    "gold": "SELECT count(*) FROM poker_player",
                }
            ]
        },
    )

    db: str = Field(
        min_length=1,
        max_length=64,
        description="The database the question is about (loaded by `adapt data load-sql`).",
        examples=["poker_player"],
    )
    question: str = Field(
        min_length=1,
        description="The natural-language question: the episode's goal.",
        examples=["How many poker players are there?"],
    )
    gold: str = Field(
        min_length=1,
        description="The reference SQL query; the submission is scored against its result.",
        examples=["SELECT count(*) FROM poker_player"],
    )
    observation: Literal["adapt", "intercode"] = Field(
        default="adapt",
        description=(
            "How a query result is shown: 'adapt' (a Columns line, at most 20 rows, long cells "
            "cut, a note on the rows left out) or 'intercode' (the rows as InterCode prints them, "
            "a Python list of tuples cut to 25 rows, errors cut to 350 characters; set by "
            "profile 'paper')."
        ),
        examples=["adapt", "intercode"],
    )
    prompts: Literal["default", "paper"] = Field(
        default="default",
        description=(
            "Executor prompt: 'default' (the project's) or 'paper' (InterCode's ReAct template: "
            "numbered Thought, Action and Observation lines, demonstrations in InterCode's "
            "observation format; set by profile 'paper')."
        ),
    )
