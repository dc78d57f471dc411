"""The experience library family: ``LibraryEntryPublic`` / ``LibraryList`` (``GET /library``),
and the export document ``LibraryExport`` (``GET /library/export``, ``POST /library/import``)
with its ``LibraryImported`` reply."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapt.engine.experience import MAX_ACTION_CHARS, MAX_ACTIONS, MAX_COUNT, MAX_GOAL_CHARS
from api.schemas.common import FROM_ROWS, STRICT

#: entries one import may hold (a bigger library is imported in parts)
MAX_IMPORT_ENTRIES = 2000
Action = Annotated[str, Field(min_length=1, max_length=MAX_ACTION_CHARS)]


class LibraryEntryPublic(BaseModel):
    model_config = FROM_ROWS

    id: int
    environment: str = Field(examples=["textcraft"])
    kind: Literal["skill", "plan"] = Field(
        description="'skill': actions replayed before the executor (reuse.skills); 'plan': a "
        "decomposition that worked, its steps in 'actions' and its order in 'logic' "
        "(reuse.plans).")
    goal: str = Field(examples=["craft 4 oak planks using 1 oak logs"])
    goal_key: str = Field(description="The key retrieval matches exactly: the environment's "
                          "canonical form of the goal (TextCraft: 'gain 4 oak_planks'), else "
                          "the goal normalised.")
    actions: list[str] = Field(description="The actions replayed, in order (a plan: its "
                               "steps).")
    logic: str | None = Field(description="A plan's execution order ('(Step 1 AND Step 2)'); "
                              "null for a skill.")
    origin: dict[str, Any] = Field(description="Where it was learned: the task and node "
                                   "('imported': true for an imported entry).")
    model: str | None = Field(description="The executor model that found it.")
    simulated: bool = Field(description="Found by a simulated model.")
    uses: int = Field(description="Replays the environment confirmed.")
    failures: int = Field(description="Replays it did not confirm.")
    failure_streak: int = Field(description="Failed replays since the last use; at 2 the "
                                "entry is dropped.")
    created_at: datetime
    last_used_at: datetime | None
    dropped_at: datetime | None = Field(description="When it was dropped for failing; null: "
                                        "live.")


class LibraryList(BaseModel):
    items: list[LibraryEntryPublic]
    total: int = Field(description="Entries matching the filters (all pages).")
    offset: int
    limit: int


class LibraryEntryData(BaseModel):
    """One entry of an export document."""

    model_config = STRICT

    environment: str = Field(min_length=1, max_length=128)
    goal: str = Field(min_length=1, max_length=MAX_GOAL_CHARS)
    goal_key: str | None = Field(
        default=None, min_length=1, max_length=MAX_GOAL_CHARS,
        description="The key the goal is found under (the environment's canonical form of "
        "the goal); unset: the goal normalised (lower case, single spaces).")
    kind: Literal["skill", "plan"] = Field(default="skill", description="What the entry "
                                           "holds: actions to replay, or a plan's steps.")
    actions: list[Action] = Field(min_length=1, max_length=MAX_ACTIONS)
    logic: str | None = Field(default=None, min_length=1, max_length=MAX_GOAL_CHARS,
                              description="A plan's execution order over its steps "
                              "('(Step 1 AND Step 2)'); unset: all steps in order.")
    origin: dict[str, Any] | None = Field(default=None, max_length=16)
    model: str | None = Field(default=None, max_length=1000)
    simulated: bool = False
    uses: int = Field(default=0, ge=0, le=MAX_COUNT)
    failures: int = Field(default=0, ge=0, le=MAX_COUNT)


class LibraryExport(BaseModel):
    """A tenant's live entries, as exported and imported."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["adapt-library"] = "adapt-library"
    version: Literal[1] = 1
    entries: list[LibraryEntryData] = Field(max_length=MAX_IMPORT_ENTRIES)


class LibraryImported(BaseModel):
    added: int = Field(description="Entries added.")
    skipped: int = Field(description="Entries whose goal already had a live entry (kept).")
