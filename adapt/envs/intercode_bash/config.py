"""The ``environment_config`` model of InterCode-Bash (validated by ``reset`` and by the API).

No field names a host path: ``fs`` picks one of the four prepared file systems, and the commands
(the agent's and the gold) only ever run inside the sandbox.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Command = Annotated[str, Field(min_length=1, max_length=10_000)]
Commands = Annotated[list[Command], Field(min_length=1, max_length=100)]


class InterCodeBashConfig(BaseModel):
    """One InterCode-Bash task: a request in words, the file system it runs on, and the gold
    command(s) whose effect and output the agent's are scored against."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "fs": 1,
                    "question": "Count the lines of all .c files under /testbed.",
                    "gold": "find /testbed -name \"*.c\" -print0 | xargs -0 cat | wc -l",
                }
            ]
        },
    )

    fs: int = Field(
        ge=1,
        le=4,
        description="The file system the task runs on (1-4: InterCode's nl2bash task sets, "
        "prepared by `adapt data prepare-bash`).",
        examples=[1],
    )
    question: str = Field(
        min_length=1,
        max_length=10_000,
        description="The request in natural language: the episode's goal.",
        examples=["Count the lines of all .c files under /testbed."],
    )
    gold: Command | Commands = Field(
        description="The reference bash command, or a list of commands run one after the other "
        "(joined with `;`, as InterCode does) in a fresh sandbox of the same file system.",
        examples=["find /testbed -name \"*.c\" -print0 | xargs -0 cat | wc -l"],
    )

    observation: Literal["adapt", "intercode"] = Field(
        default="adapt",
        description="How a command's output is shown: 'adapt' (at most 1000 characters with a "
        "note on the rest, '(no output)', an '[exit status N]' line after a failure) or "
        "'intercode' (the raw output cut to 350 characters, as InterCode's ReAct agent shows it; "
        "set by profile 'paper'). The reward always scores the full output.",
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

    @property
    def gold_command(self) -> str:
        """The gold as one command line."""
        return self.gold if isinstance(self.gold, str) else ";".join(self.gold)
