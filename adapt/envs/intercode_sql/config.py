"""The ``environment_config`` model of InterCode-SQL (validated by ``reset`` and by the API)."""

from __future__ import annotations

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
