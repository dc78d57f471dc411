"""ALFWorld verification: the task by its goal conditions, take / go to sub-goals by the state."""

from __future__ import annotations

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.envs.alfworld import ALFWorld, generate


def test_verify_follows_the_household_state() -> None:
    env = ALFWorld()
    try:
        env.reset(seed=0)
        walkthrough = generate(0).walkthrough
        assert env.verify(env.goal).verdict == "refuted"
        assert env.verify("clean the mug with the sinkbasin").verdict == "unknown"
        take = next(i for i, c in enumerate(walkthrough) if c.startswith("take "))
        obj = walkthrough[take].removeprefix("take ").split(" from ")[0]  # e.g. "mug 1"
        kind = obj.rsplit(" ", 1)[0]
        for command in walkthrough[:take]:
            env.step(command)
        assert env.verify(f"find and take a {kind}").verdict == "refuted"
        where = walkthrough[take - 1].removeprefix("go to ")
        if walkthrough[take - 1].startswith("go to "):
            check = env.verify(f"go to {where}")
            assert check.verdict == "confirmed" and check.evidence == f"is at {where}"
        env.step(walkthrough[take])
        check = env.verify(f"Find and take a {kind} from the {where}.")
        assert check.verdict == "confirmed" and check.evidence == f"holds {obj}"
        for command in walkthrough[take + 1:]:
            env.step(command)
        assert env.verify(env.goal).verdict == "confirmed"
    finally:
        env.close()


# -- the planner's phrasings (adapt/envs/alfworld/prompts/planner.txt) -----------------------
KINDS = frozenset({"soapbottle", "mug", "countertop", "sinkbasin", "drawer", "butterknife",
                   "knife", "cellphone", "desklamp", "coffeemachine"})


@pytest.mark.parametrize(("goal", "held", "verdict"), [
    # determiners, ordinals and counts of one are not part of the name
    ("find and take another soapbottle", ["soapbottle 2"], "confirmed"),
    ("find and take a second soapbottle", ["soapbottle 2"], "confirmed"),
    ("take the second soapbottle from the countertop", ["soapbottle 2"], "confirmed"),
    ("find and take the other soapbottle", ["soapbottle 2"], "confirmed"),
    ("find and take one soapbottle", ["soapbottle 2"], "confirmed"),
    ("find and take 1 soapbottle from a drawer", ["soapbottle 2"], "confirmed"),
    ("find and take the soapbottle", ["soapbottle 2"], "confirmed"),
    ("find and take some soapbottles", ["soapbottle 2"], "confirmed"),
    ("find and take a soap bottle", ["soapbottle 2"], "confirmed"),
    ("pick up the soapbottle 2 from the countertop 1", ["soapbottle 2"], "confirmed"),
    # what the state decides for sure: nothing of that kind is held, another instance is
    ("find and take another soapbottle", [], "refuted"),
    ("find and take a second soapbottle", ["mug 1"], "refuted"),
    ("find and take a clean mug", [], "refuted"),
    ("take the soapbottle 1 from the countertop", ["soapbottle 2"], "refuted"),
    # what it cannot decide: a state it does not see, two at once, a second action, words that
    # name no object of the game, a kind inside another one
    ("find and take a clean mug", ["mug 1"], "unknown"),
    ("find and take a hot mug", ["mug 1"], "unknown"),
    ("find and take 2 soapbottles", ["soapbottle 2"], "unknown"),
    ("find and take two soapbottles", [], "unknown"),
    ("find and take a soapbottle and put it in the drawer", [], "unknown"),
    ("take the mug to the coffeemachine", [], "unknown"),
    ("take a mug from the countertop, then clean it", [], "unknown"),
    ("take a look at the countertop", [], "unknown"),
    ("find and take a red mug", [], "unknown"),
    ("find and take a knife", ["butterknife 1"], "unknown"),
])
def test_take_phrasings(goal: str, held: list[str], verdict: str) -> None:
    from adapt.envs.alfworld.verify import check_take

    check = check_take(goal, held, (), KINDS)
    assert check is not None and check.verdict == verdict, check


def test_another_needs_an_object_not_held_when_the_node_started() -> None:
    from adapt.envs.alfworld.verify import check_take

    goal = "find and take another soapbottle"
    assert check_take(goal, ["soapbottle 1"], ("soapbottle 1",), KINDS).verdict == "unknown"
    assert check_take(goal, ["soapbottle 1"], None, KINDS).verdict == "unknown"
    check = check_take(goal, ["soapbottle 2"], ("soapbottle 1",), KINDS)
    assert (check.verdict, check.evidence) == ("confirmed", "holds soapbottle 2")
    # a plain "a soapbottle" is satisfied by the one already held (the node is skipped)
    assert check_take("find and take a soapbottle", ["soapbottle 1"], ("soapbottle 1",),
                      KINDS).verdict == "confirmed"


@pytest.mark.parametrize(("goal", "where", "verdict"), [
    ("go to the countertop", "countertop 1", "confirmed"),
    ("go to a drawer", "drawer 3", "confirmed"),
    ("go to countertop 1", "countertop 1", "confirmed"),
    ("go to countertop 2", "countertop 1", "refuted"),
    ("go to the countertop", None, "refuted"),
    ("go to the sink", "sinkbasin 1", "unknown"),
    ("go to the kitchen", "countertop 1", "unknown"),
    ("go to the countertop and take a mug", "countertop 1", "unknown"),
])
def test_go_to_phrasings(goal: str, where: str | None, verdict: str) -> None:
    from adapt.envs.alfworld.verify import check_go

    check = check_go(goal, where, KINDS)
    assert check is not None and check.verdict == verdict, check


def test_the_planner_prompts_two_object_plan_is_checked_without_false_refutations() -> None:
    """pick_two: the second take ("find and take another <kind>", the planner prompt's own
    words) is confirmed by the new object, never refuted after it succeeded."""
    env = ALFWorld()
    try:
        env.reset(seed=1, task_type="pick_two")
        walkthrough = generate(1, task_type="pick_two").walkthrough
        takes = [i for i, c in enumerate(walkthrough) if c.startswith("take ")]
        second = walkthrough[takes[1]].removeprefix("take ").split(" from ")[0]  # "book 1"
        kind = second.rsplit(" ", 1)[0]
        for command in walkthrough[: takes[0] + 1]:
            env.step(command)
        first_mark = env.verification_mark()
        assert env.verify(f"find and take a {kind}", since=first_mark).verdict == "confirmed"
        for command in walkthrough[takes[0] + 1 : takes[1]]:
            env.step(command)  # the first one is put down: nothing held
        mark = env.verification_mark()
        assert mark == ()
        assert env.verify(f"find and take another {kind}", since=mark).verdict == "refuted"
        env.step(walkthrough[takes[1]])
        for phrasing in (f"find and take another {kind}", f"Find and take a second {kind}.",
                         f"take the second {kind}", f"find and take one {kind}"):
            check = env.verify(phrasing, since=mark)
            assert (check.verdict, check.evidence) == ("confirmed", f"holds {second}"), phrasing
        assert env.verify(f"put the second {kind} in the same drawer").verdict == "unknown"
    finally:
        env.close()
