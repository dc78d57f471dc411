"""adapt's TextCraft against AgentGym's TextCraft server (the reference's crafting logic,
unmodified, in ``../shared/peers/agentgym-textcraft``): the same command lines, word for word.

One server, started here on 127.0.0.1 with ``serve.sh``, reset once per goal it serves (544).
Its listings hold a goal's recipe tree plus shuffled distractors, so lines are compared one by
one: every line of adapt's recipe tree for the goal is in the peer's listing (same ingredient
order), and every line the peer lists is a command of adapt's recipe book.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from adapt.envs.textcraft.book import load_book
from tests.support.agentgym_peer import peer_dir_or_skip, running_peer

#: the goals the peer serves: every item with a recipe of depth >= 1 (its README)
PEER_GOALS = 544

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def peer(peer_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    peer_dir_or_skip()
    log_path = tmp_path_factory.mktemp("peer") / "server.log"
    with running_peer(peer_dir, log_path) as running, httpx.Client(
            base_url=running.url, timeout=30.0) as client:
        yield client


def _post(client: httpx.Client, path: str, body: dict[str, object]) -> dict[str, object]:
    response = client.post(path, json=body)
    response.raise_for_status()
    data = response.json()
    assert isinstance(data, dict) and "error" not in data, data
    return data


def _listing(observation: str) -> tuple[list[str], str]:
    """The command lines and the goal text of a reset observation."""
    head, _, goal = observation.partition("\n\nGoal: ")
    assert head.startswith("Crafting commands:\n") and goal.startswith("craft "), observation
    return head.split("\n")[1:], goal.removeprefix("craft ").removesuffix(".")


def test_every_goal_of_the_peer_lists_adapts_recipe_tree_word_for_word(
    peer: httpx.Client,
) -> None:
    book = load_book()
    commands = set(book.commands())
    env_id = _post(peer, "/create", {})["id"]
    goals: dict[str, int] = {}
    uncraftable: list[str] = []  # peer goals adapt has no recipe for
    missing: list[str] = []  # adapt's tree lines the peer does not list
    unknown: list[str] = []  # peer lines adapt's book does not have
    for index in range(PEER_GOALS):
        observation = _post(peer, "/reset", {"id": env_id, "data_idx": index})["observation"]
        assert isinstance(observation, str)
        lines, goal_text = _listing(observation)
        goal = book.resolve(goal_text)
        if goal is None or not book.is_craftable(goal):
            uncraftable.append(f"{index} {goal_text}")
            continue
        goals[goal] = index
        listed = set(lines)
        missing += [f"{index} {goal}: {r.line}" for r in book.recipe_tree(goal) if r.line not in listed]
        unknown += [f"{index} {goal}: {line}" for line in lines if line not in commands]
    assert not (uncraftable or missing or unknown), (
        f"peer goals adapt cannot craft: {uncraftable}; "
        f"{len(missing)} lines of adapt's recipe trees not in the peer's listing: {missing[:8]}; "
        f"{len(unknown)} peer lines not in adapt's book: {unknown[:8]}"
    )
    # the peer serves each of adapt's craftable items once, and nothing else
    assert len(goals) == PEER_GOALS
    assert set(goals) == set(book.by_output)
    # the cycle rule keeps what the published games (and the peer) show
    for line in (
        "craft 9 gold nugget using 1 gold ingot",
        "craft 9 iron nugget using 1 iron ingot",
        "craft 4 honey bottle using 1 honey block, 4 glass bottle",
    ):
        assert line in commands
