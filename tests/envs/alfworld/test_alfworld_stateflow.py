"""The StateFlow ALFWorld machine (the paper's: Plan, Pick, Clean / Heat / Cool, Put, Find lamp,
Use lamp, wrong-pick handling) on the real engine with scripted models."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateflow.loader import load_machine
from adapt.envs.alfworld import ALFWorld
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

_PICKED = re.compile(r"You pick up the (\w+) \d+")


def scripted(actions: list[str], wanted: str) -> FunctionModel:
    """Plays ``actions`` in order; answers the machine's checks with yes when the last object
    picked up is ``wanted``."""
    left = list(actions)

    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        if request.role == "check":
            picked = _PICKED.findall(prompt)
            return "yes" if picked and picked[-1] == wanted else "no"
        return left.pop(0) if left else "think: Task failed!"

    return FunctionModel(reply, name="scripted")


async def play(seed: int, task_type: str, model: FunctionModel) -> tuple[float, list[str]]:
    env = ALFWorld()
    sink = MemorySink()
    try:
        result = await run_task(env, {"seed": seed, "task_type": task_type},
                                RunConfig(strategy="react", d_max=1,
                                          executor={"kind": "stateflow"}), model, sink=sink)
    finally:
        env.close()
    return result.reward, [str((s.extra or {}).get("state")) for s in sink.steps[1]]


def test_the_machine_loads_with_the_papers_states() -> None:
    machine = load_machine("alfworld")
    assert {"Plan", "Pick", "WrongPick", "Clean", "Heat", "Cool", "Put", "FindLamp",
            "UseLamp", "Fail"} <= set(machine.states)
    assert machine.initial == "Plan"


async def test_heat_with_a_wrong_pick_put_back() -> None:
    actions = ["think: I need an egg, then the microwave, then the diningtable. I try the "
               "countertop 1 first.", "go to countertop 1", "take apple 2 from countertop 1",
               "move apple 2 to countertop 1", "take egg 2 from countertop 1",
               "go to microwave 1", "heat egg 2 with microwave 1", "go to diningtable 1",
               "move egg 2 to diningtable 1"]
    reward, states = await play(1, "heat", scripted(actions, "egg"))
    assert reward == 1.0
    assert states == ["Plan", "Pick", "Pick", "WrongPick", "Pick", "Heat", "Heat", "Put", "Put"]


async def test_examine_finds_and_uses_the_lamp() -> None:
    actions = ["think: I need a pen, then a desklamp.", "go to dresser 1",
               "take pen 1 from dresser 1", "go to shelf 1", "go to shelf 2", "use desklamp 1"]
    reward, states = await play(1, "examine", scripted(actions, "pen"))
    assert reward == 1.0
    assert states == ["Plan", "Pick", "Pick", "FindLamp", "FindLamp", "UseLamp"]


async def test_nothing_happens_stays_in_the_state() -> None:
    actions = ["think: plan", "go to dresser 1", "take pen 9 from dresser 1",
               "think: Task failed!"]
    reward, states = await play(1, "examine", scripted(actions, "pen"))
    assert reward == 0.0
    assert states == ["Plan", "Pick", "Pick", "Pick"]
