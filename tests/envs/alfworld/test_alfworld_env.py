"""ALFWorld on the real engine: conformance, the six task types, commands, determinism, caches,
game files and configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.envs import registry
from adapt.envs.alfworld import ALFWorld, generate, generated_set
from adapt.envs.alfworld.games import GENERATED_SETS, TASK_ORDER
from adapt.envs.testing import check_environment
from adapt.errors import InvalidConfig, UserError

TYPES = ("pick", "clean", "heat", "cool", "examine", "pick_two")
#: words every task sentence of a type contains (ALFWorld's goal-library templates)
SENTENCE = {"pick": ("put",), "clean": ("clean",), "heat": ("hot", "heat"),
            "cool": ("cool",), "examine": ("desklamp", "floorlamp"), "pick_two": ("two",)}


@pytest.fixture
def env():  # type: ignore[no-untyped-def]
    e = ALFWorld()
    yield e
    e.close()


def as_put(command: str, word: str) -> str:
    """``move mug 1 to countertop 1`` -> ``put mug 1 <word> countertop 1``."""
    obj, _, recep = command.removeprefix("move ").partition(" to ")
    return f"put {obj} {word} {recep}"


@pytest.mark.slow
def test_conformance_kit_passes() -> None:
    walkthrough = generate(0).walkthrough
    report = check_environment(ALFWorld, actions=[*walkthrough[:-1], "look", "inventory"])
    assert report.passed[-1] == "close" and len(report.configs) == 2
    assert report.tools == sorted(["go_to", "open", "close", "take", "put", "clean", "heat",
                                   "cool", "use", "examine", "look", "inventory"])


@pytest.mark.parametrize("task_type", TYPES)
def test_each_task_type_generates_validates_and_is_won_by_its_walkthrough(
        env: ALFWorld, task_type: str) -> None:
    observation = env.reset(seed=11, task_type=task_type)
    assert env.task_type == task_type and env.game.task_type == task_type
    assert observation.startswith("You are in the middle of a room. Looking quickly around you")
    assert f"Your task is to: {env.goal}." in observation
    assert any(word in env.goal for word in SENTENCE[task_type])
    walkthrough = env.walkthrough()
    assert walkthrough
    for i, command in enumerate(walkthrough):
        assert command in env.admissible_commands()
        result = env.step(command)
        assert result.observation != "Nothing happens."
        assert result.done is (i == len(walkthrough) - 1), (i, command, result)
    assert result.reward == 1.0
    skills = {"clean": "clean ", "heat": "heat ", "cool": "cool ", "examine": "use "}
    if task_type in skills:  # the walkthrough uses the skill the type is about
        assert any(c.startswith(skills[task_type]) for c in walkthrough)
    if task_type == "pick_two":
        assert sum(c.startswith("move ") for c in walkthrough) == 2


@pytest.mark.parametrize("word", ["in/on", "in", "on", "into"])
def test_put_in_on_works_like_move_to(env: ALFWorld, word: str) -> None:
    env.reset(seed=11, task_type="pick")
    walkthrough = env.walkthrough()
    assert walkthrough[-1].startswith("move ")
    for command in walkthrough[:-1]:
        env.step(command)
    result = env.step(as_put(walkthrough[-1], word))
    assert result.done and result.reward == 1.0
    assert result.observation.startswith("You move the ")


def test_case_spacing_articles_and_prompt_marks_do_not_matter(env: ALFWorld) -> None:
    env.reset(seed=11, task_type="pick")
    first = env.walkthrough()[0]  # go to <receptacle>
    target = first.removeprefix("go to ")
    result = env.step(f">  Go  To   the {target.title()}. ")
    assert result.observation.startswith(f"You arrive at {target}.")


def test_unknown_commands_say_nothing_happens_and_count_as_failures(env: ALFWorld) -> None:
    env.reset(seed=11, task_type="pick")
    result = env.step("fly to the moon")
    assert result.observation == "Nothing happens." and env.is_failure(result.observation)
    assert not result.done and result.reward == 0.0
    assert env.step("think: where is it?").observation == "OK."
    assert not env.is_failure("You arrive at countertop 1. On the countertop 1, you see nothing.")


def test_near_miss_maps_to_the_closest_admissible_command_only_when_asked(env: ALFWorld) -> None:
    env.reset(seed=11, task_type="pick")
    target = env.walkthrough()[0].removeprefix("go to ")
    typo = f"go to {target[:-3]}{target[-3:].replace(' ', '')}"  # "countertop1"
    assert env.step(typo).observation == "Nothing happens."
    env.reset(seed=11, task_type="pick", near_miss=True)
    result = env.step(typo)
    assert result.info["mapped_to"] == f"go to {target}"
    assert result.observation.startswith(f"You arrive at {target}.")
    assert "mapped_to" not in env.step("xyzzy plugh").info


def test_same_seed_same_game_and_other_seeds_other_games() -> None:
    first = generate(5, "clean")
    again = generate.__wrapped__(5, "clean")  # not the memoised one
    assert again.document() == first.document()
    assert generate(6, "clean").pddl_problem != first.pddl_problem
    assert generate(5, "heat").pddl_problem != first.pddl_problem


@pytest.mark.slow
def test_generation_does_not_depend_on_the_process() -> None:
    code = ("import hashlib; from adapt.envs.alfworld import generate; g = generate(7); "
            "print(hashlib.sha256((g.pddl_problem + g.grammar + repr(g.walkthrough))"
            ".encode()).hexdigest())")
    digests = set()
    for hash_seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def _trace(env: ALFWorld, commands: list[str]) -> list[tuple[str, float, bool, list[str]]]:
    trace = [(env.reset(seed=3, task_type="heat"), 0.0, False, env.admissible_commands())]
    for command in commands:
        r = env.step(command)
        trace.append((r.observation, r.reward, r.done, env.admissible_commands()))
    return trace


def test_the_caches_do_not_change_what_the_game_says() -> None:
    walkthrough = generate(3, "heat").walkthrough
    commands = ["look", "inventory", "xyzzy", walkthrough[0], "look", *walkthrough[1:]]
    cached, plain = ALFWorld(), ALFWorld(cache=False)
    try:
        first = _trace(cached, commands)
        assert first == _trace(plain, commands)
        assert first == _trace(cached, commands)  # again, from the caches
        assert first[-1][2] is True
    finally:
        cached.close()
        plain.close()


def test_context_is_the_last_meaningful_action_where_the_agent_is_and_what_it_holds(
        env: ALFWorld) -> None:
    env.reset(seed=11, task_type="clean")
    assert env.salient_state() is None
    walkthrough = env.walkthrough()
    take = next(i for i, c in enumerate(walkthrough) if c.startswith("take "))
    for command in walkthrough[: take + 1]:
        observation = env.step(command).observation
    env.step("look")  # looking is not meaningful
    env.step("xyzzy")  # nor is a failure
    state = env.salient_state()
    assert state is not None
    obj = walkthrough[take].removeprefix("take ").split(" from ")[0]
    where = walkthrough[take].split(" from ")[1]
    assert f"> {walkthrough[take]}\n{observation}\n" in state
    assert f"current location: {where}" in state and f"current inventory: {obj}" in state
    text = env.task_observation("clean the object with the sinkbasin")
    assert text.endswith("\n\nYour task is to: clean the object with the sinkbasin.")


def test_generated_sets_are_balanced_across_the_six_types() -> None:
    for split, (_, per_type) in GENERATED_SETS.items():
        refs = generated_set(split)
        assert len(refs) == per_type * 6
        assert {t: sum(r.task_type == t for r in refs) for t in TYPES} == dict.fromkeys(
            TYPES, per_type)
    assert [r.task_type for r in generated_set("test")[:6]] == list(TASK_ORDER)


@pytest.mark.slow
def test_the_first_dev_games_play_in_order(env: ALFWorld) -> None:
    for ref in generated_set("dev")[:6]:
        env.reset(**ref.config)
        assert env.task_type == ref.task_type
        for command in env.walkthrough():
            result = env.step(command)
        assert result.done


def _official_tree(root: Path) -> Path:
    game = generate(11, "clean")
    trial = root / "json_2.1.1" / "valid_unseen" / "pick_clean_then_place_in_recep-X-None-Y-1" \
        / "trial_T1"
    trial.mkdir(parents=True)
    (trial / "game.tw-pddl").write_text(json.dumps(game.document()))
    (trial / "traj_data.json").write_text(json.dumps(
        {"task_type": "pick_clean_then_place_in_recep"}))
    skipped = root / "json_2.1.1" / "valid_unseen" / "pick_and_place_with_movable_recep-X-1" \
        / "trial_T0"
    skipped.mkdir(parents=True)
    (skipped / "game.tw-pddl").write_text(json.dumps(game.document()))
    return trial


def test_official_game_files_play_from_a_path_and_from_a_split(
        env: ALFWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trial = _official_tree(tmp_path)
    generated = env.reset(seed=11, task_type="clean")
    assert env.reset(game_path=str(trial)) == generated
    assert env.task_type == "clean" and env.walkthrough() == list(generate(11, "clean").walkthrough)
    assert env.reset(game_path=str(trial / "game.tw-pddl")) == generated
    # the split skips the movable task, as ALFWorld does
    assert env.reset(split="valid_unseen", index=0, data_dir=str(tmp_path)) == generated
    with pytest.raises(InvalidConfig, match=r"has 1 games \(index 0-0\)"):
        env.reset(split="valid_unseen", index=1, data_dir=str(tmp_path))
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert env.reset(split="valid_unseen") == generated
    monkeypatch.delenv("ALFWORLD_DATA")
    with pytest.raises(InvalidConfig, match="ALFWORLD_DATA"):
        env.reset(split="valid_unseen")


def test_bad_game_files_and_configs_get_clear_errors(env: ALFWorld, tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="no game file"):
        env.reset(game_path=str(tmp_path / "nowhere"))
    (tmp_path / "game.tw-pddl").write_text("{not json")
    with pytest.raises(InvalidConfig, match="not an ALFWorld game file"):
        env.reset(game_path=str(tmp_path))
    with pytest.raises(InvalidConfig, match="exactly one of seed"):
        env.reset()
    with pytest.raises(InvalidConfig, match="exactly one of seed"):
        env.reset(seed=1, split="test")
    with pytest.raises(InvalidConfig, match="task_type"):
        env.reset(seed=1, task_type="juggle")
    with pytest.raises(InvalidConfig, match="cannot be set in FloorPlan401"):
        env.reset(seed=1, task_type="heat", scene=401)
    with pytest.raises(InvalidConfig, match="has 30 games"):
        env.reset(split="dev", index=30)
    with pytest.raises(UserError, match="reset"):
        ALFWorld().step("look")
    # ALFWorld's own task type names work too
    env.reset(seed=11, task_type="pick_clean_then_place_in_recep")
    assert env.task_type == "clean"


def test_registered_as_a_built_in_with_its_config_schema() -> None:
    assert registry.get("alfworld") is ALFWorld
    info = registry.environment_info("alfworld")
    assert {"seed", "task_type", "split", "index", "game_path", "near_miss"} <= set(
        info.config_schema["properties"])
    with pytest.raises(InvalidConfig, match="exactly one of seed"):
        registry.validate_config("alfworld", {"task_type": "clean"})


@pytest.mark.slow
def test_without_the_extra_alfworld_is_left_out_and_said_only_when_asked_for() -> None:
    """Issue 14: no warning on every command; asking for alfworld says how to install it."""
    code = (
        "import importlib.util, logging, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'textworld' else real(n, *a)\n"
        "logging.basicConfig(level=logging.WARNING, stream=sys.stdout)\n"
        "from adapt.envs import available, registry\n"
        "print(sorted(available()))\n"
        "try:\n"
        "    registry.get('alfworld')\n"
        "except Exception as exc:\n"
        "    print('ASKED:', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    listed, asked = out.stdout.strip().splitlines()
    assert "'textcraft'" in listed and "'alfworld'" not in listed
    assert "WARNING" not in out.stdout
    assert 'pip install -e ".[alfworld]"' in asked and "not installed: textworld" in asked
