"""TextCraft verification: hold vs gain goals, tags by members, the root by the reward."""

from __future__ import annotations

import pytest

from adapt.envs.textcraft import TextCraft
from adapt.envs.textcraft.verify import parse_goal_form
from adapt.envs.verdicts import Verifiable, reward_verification

COMMANDS = [
    "craft 1 beehive using 6 planks, 3 honeycomb",
    "craft 4 oak planks using 1 oak logs",
    "craft 4 birch planks using 1 birch logs",
    "craft 4 stick using 2 planks",
]


def planks(env: TextCraft, kind: str = "oak") -> None:
    """4 more planks of a kind (planks have a recipe, so they cannot be fetched)."""
    env.step(f"get 1 {kind} logs")
    assert env.step(f"craft 4 {kind} planks using 1 {kind} logs").observation.startswith("Crafted")


@pytest.fixture
def env() -> TextCraft:
    env = TextCraft()
    env.reset(goal="craft beehive", commands=COMMANDS)
    return env


def test_textcraft_is_verifiable(env: TextCraft) -> None:
    assert isinstance(env, Verifiable)


def test_goal_forms(env: TextCraft) -> None:
    book = env.book
    form = parse_goal_form(book, "Step 2: fetch 6 oak planks.")
    assert form is not None and (form.mode, form.count, form.item) == ("hold", 6, "oak_planks")
    form = parse_goal_form(book, "craft 4 stick using 2 oak planks")
    assert form is not None and (form.mode, form.count, form.item) == ("gain", 4, "stick")
    form = parse_goal_form(book, "obtain sticks")
    assert form is not None and (form.mode, form.count, form.item) == ("hold", 1, "stick")
    assert parse_goal_form(book, "make the beehive nicely") is None
    assert parse_goal_form(book, "fetch 2 unobtainium") is None


def test_hold_goal_refuted_with_counts_then_confirmed(env: TextCraft) -> None:
    planks(env)
    check = env.verify("fetch 6 oak planks", since=env.verification_mark())
    assert check.verdict == "refuted" and check.evidence == "holds 4 of 6 oak planks"
    planks(env)
    check = env.verify("fetch 6 oak planks")
    assert check.verdict == "confirmed" and check.evidence == "holds 8 of 6 oak planks"


def test_hold_counts_a_category_by_its_members(env: TextCraft) -> None:
    planks(env)
    assert env.verify("get 6 planks").verdict == "refuted"
    planks(env, "birch")
    check = env.verify("get 6 planks")
    assert check.verdict == "confirmed" and check.evidence == "holds 8 of 6 planks"


def test_gain_counts_only_what_the_node_made(env: TextCraft) -> None:
    planks(env)
    env.step("craft 4 stick using 2 oak planks")
    mark = env.verification_mark()  # a second "craft 4 stick" node starts here
    check = env.verify("craft 4 stick using 2 oak planks", since=mark)
    assert check.verdict == "refuted" and "made 0 of 4 stick" in check.evidence
    env.step("craft 4 stick using 2 oak planks")
    assert env.verify("craft 4 stick using 2 oak planks", since=mark).verdict == "confirmed"
    # hold: 8 sticks are held, so a hold goal for 8 is met whoever made them
    assert env.verify("fetch 8 stick", since=mark).verdict == "confirmed"


def test_gain_survives_using_the_item_up(env: TextCraft) -> None:
    mark = env.verification_mark()
    planks(env)
    env.step("craft 4 stick using 2 oak planks")
    assert env.verify("craft 4 oak planks", since=mark).verdict == "confirmed"
    assert env.verify("fetch 4 oak planks", since=mark).verdict == "refuted"


def test_root_goal_by_reward(env: TextCraft) -> None:
    check = env.verify("craft beehive.")
    assert check.verdict == "refuted" and "reward 0" in check.evidence
    planks(env)
    planks(env)
    env.step("get 3 honeycomb")
    assert env.step("craft 1 beehive using 6 oak planks, 3 honeycomb").reward == 1.0
    check = env.verify("Craft Beehive")
    assert check.verdict == "confirmed" and "reward 1" in check.evidence


def test_unknown_goal_keeps_claim(env: TextCraft) -> None:
    check = env.verify("think hard about bees")
    assert check.verdict == "unknown" and not check.checkable


def test_reset_clears_production(env: TextCraft) -> None:
    planks(env)
    env.reset(goal="craft beehive", commands=COMMANDS)
    assert env.verify("craft 4 oak planks").verdict == "refuted"
    assert env.verify("fetch 1 oak planks").evidence == "holds 0 of 1 oak planks"


def test_reward_verification() -> None:
    assert reward_verification(1.0, True).verdict == "confirmed"
    assert reward_verification(0.4, True).verdict == "refuted"
    assert reward_verification(0.0, False).verdict == "unknown"
