"""StateFlow on ALFWorld under profile paper, as the authors' code (stateflow.py,
completion_utils.py): every action mapped to the closest admissible command by BLEU (> 0.01),
the Plan state's examples chosen by the task's type, Put back to Pick after any action on the
two-object tasks, only a desklamp leading to UseLamp. Real engine, scripted models."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateflow.loader import load_machine
from adapt.engine.resolve import resolve_config
from adapt.envs.alfworld import ALFWorld
from adapt.envs.alfworld.commands import bleu, bleu_match
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel

_PICKED = re.compile(r"You pick up the (\w+) \d+")

#: (reference, candidate, NLTK 3.10's sentence_bleu with SmoothingFunction().method4)
NLTK = [
    ("go to countertop 1", "go to countertop 1", 1.0),
    ("go to countertop 1", "go to countertop 2", 0.43146827293898643),
    ("go to countertop 1", "go to countertop", 0.41252121275142684),
    ("take mug 1 from countertop 1", "take the mug from countertop 1", 0.26560992664366523),
    ("take mug 1 from countertop 1", "think: i need a mug", 0.037374807627842434),
    ("go to countertop 1", "mug", 0.0),
    ("go to countertop 1", "go", 0.049787068367863944),
    ("move apple 1 to diningtable 1", "put apple 1 in/on diningtable 1", 0.1374292659508281),
    ("inventory", "check inventory", 0.06754436142034707),
    ("heat egg 1 with microwave 1", "heat egg with microwave", 0.14429214010467267),
]


@pytest.mark.parametrize(("reference", "candidate", "expected"), NLTK)
def test_bleu_is_nltks_sentence_bleu_with_smoothing_4(reference: str, candidate: str,
                                                      expected: float) -> None:
    assert bleu(reference, candidate) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_bleu_match_takes_the_best_command_above_the_limit() -> None:
    commands = ["go to countertop 1", "go to countertop 2", "take mug 1 from countertop 1"]
    assert bleu_match("go to countertop", commands) == "go to countertop 1"  # first of a tie
    assert bleu_match("grab the mug", commands) == "take mug 1 from countertop 1"
    assert bleu_match("go to countertop 2", commands) is None  # admissible as it is
    assert bleu_match("dance", commands) is None  # no word in common: BLEU 0


def test_the_environment_maps_by_bleu_only_when_asked() -> None:
    env = ALFWorld()
    try:
        env.reset(seed=1, task_type="heat", near_miss="bleu")
        result = env.step("go to fridge")
        assert result.info["mapped_to"] == "go to fridge 1"
        assert result.observation.startswith("You arrive at fridge 1")
        # cut at the first ".", as the reference; a thought is no command
        assert "mapped_to" not in env.step("open fridge 1. Then I look inside").info
        assert env.step("think: the egg should be here").observation == "OK."
        env.reset(seed=1, task_type="heat")
        assert env.step("go to fridge").observation == "Nothing happens."
    finally:
        env.close()


def test_paper_maps_actions_for_the_stateflow_design_only() -> None:
    stateflow = RunConfig.model_validate({"profile": "paper", "strategy": "react",
                                          "executor": {"kind": "stateflow"}})
    assert resolve_config(stateflow, ALFWorld)[1]["near_miss"] == "bleu"
    assert resolve_config(RunConfig(profile="paper", strategy="stateflow"),
                         ALFWorld)[1]["near_miss"] == "bleu"
    assert "near_miss" not in resolve_config(RunConfig(profile="paper"), ALFWorld)[1]
    assert "near_miss" not in resolve_config(stateflow.model_copy(update={"profile": "default"}),
                                            ALFWorld)[1]


def scripted(actions: list[str], wanted: str, prompts: list[str]) -> FunctionModel:
    left = list(actions)

    def reply(request: ChatRequest) -> str:
        prompt = request.as_prompt()
        if request.role == "check":
            picked = _PICKED.findall(prompt)
            return "yes" if picked and picked[-1] == wanted else "no"
        prompts.append(prompt)
        return left.pop(0) if left else "think: Task failed!"

    return FunctionModel(reply, name="scripted")


async def play(profile: str, task_type: str, actions: list[str], wanted: str,
               seed: int = 1) -> tuple[float, list[str], list[str]]:
    env, sink, prompts = ALFWorld(), MemorySink(), []  # type: ignore[var-annotated]
    try:
        result = await run_task(env, {"seed": seed, "task_type": task_type},
                                RunConfig(profile=profile, strategy="react", d_max=1,
                                          executor={"kind": "stateflow"}),
                                scripted(actions, wanted, prompts), sink=sink)
    finally:
        env.close()
    return result.reward, [str((s.extra or {}).get("state")) for s in sink.steps[1]], prompts


async def test_put_returns_to_pick_after_any_action_on_two_object_tasks() -> None:
    actions = ["think: Plan: find two books.", "go to sidetable 1",
               "take book 2 from sidetable 1", "go to diningtable 1",
               "move book 2 to diningtable 1", "go to armchair 1", "take book 1 from armchair 1",
               "go to diningtable 1", "move book 1 to diningtable 1"]
    reward, states, _ = await play("paper", "pick_two", actions, "book")
    assert reward == 1.0
    assert states == ["Plan", "Pick", "Pick", "Put", "Pick", "Pick", "Pick", "Put", "Pick"]
    reward, states, _ = await play("default", "pick_two", actions, "book")
    assert reward == 1.0
    assert states == ["Plan", "Pick", "Pick", "Put", "Put", "Pick", "Pick", "Put", "Put"]


async def test_the_plan_shows_examples_of_the_tasks_type_and_actions_are_mapped() -> None:
    actions = ["think: Plan: find an egg, heat it, put it on the diningtable.", "go to fridge",
               "open fridge 1", "take egg 3 from fridge 1", "go to microwave 1",
               "heat egg 3 with microwave 1", "go to diningtable 1",
               "put egg 3 in/on diningtable 1"]
    reward, states, prompts = await play("paper", "heat", actions, "egg")
    assert reward == 1.0
    plan = prompts[0]
    assert "Your task is to: put a hot potato in fridge." in plan  # the heat examples
    assert "pillow" not in plan and "soapbottle" not in plan  # no other type's
    assert states[:2] == ["Plan", "Pick"]
    _, _, default_prompts = await play("default", "heat", actions, "egg")
    assert "## Examples" not in default_prompts[0]
    _, _, two = await play("paper", "pick_two", ["think: Task failed!"], "book")
    assert "Your task is to: put two pillow in bed." in two[0] and "hot potato" not in two[0]


def test_only_a_desklamp_leads_to_use_lamp_under_paper() -> None:
    def next_state(profile: str, observation: str) -> str | None:
        state = load_machine("alfworld").for_profile(profile).states["FindLamp"]
        values = {"output": "go to sidetable 1", "action": "go to sidetable 1",
                  "observation": observation, "failed": "no", "task": ""}
        return next((t.to for t in state.transitions
                     if all(rule.matches(values) for rule in t.when)), None)

    floor = "You arrive at sidetable 1. On the sidetable 1, you see a floorlamp 1."
    desk = "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1."
    assert next_state("default", floor) == "UseLamp"
    assert next_state("paper", floor) is None  # stays in FindLamp
    assert next_state("paper", desk) == "UseLamp"
