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
