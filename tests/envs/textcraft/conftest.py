"""Where the TextCraft tests find ``../shared``: the game's recipe files and the AgentGym peer.

``../shared`` next to the repository, or the folder ``ADAPT_TEST_SHARED`` names (a git worktree
elsewhere). Tests that need it skip with the reason when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(
    os.environ.get("ADAPT_TEST_SHARED") or Path(__file__).resolve().parents[3].parent / "shared"
)
RECIPES = SHARED / "data" / "textcraft-recipes-1.16" / "recipes"
PEER = SHARED / "peers" / "agentgym-textcraft"


@pytest.fixture(scope="session")
def recipe_files() -> Path:
    if not RECIPES.is_dir():
        pytest.skip(f"no Minecraft 1.16.5 recipe files at {RECIPES} (set ADAPT_TEST_SHARED)")
    return RECIPES


@pytest.fixture(scope="session")
def peer_dir() -> Path:
    if not (PEER / "serve.sh").is_file():
        pytest.skip(f"no AgentGym TextCraft peer at {PEER} (set ADAPT_TEST_SHARED)")
    return PEER
