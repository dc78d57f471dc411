"""StateAct on ALFWorld under profile paper, as the StateAct code (alfworld_run.py,
alfworld_ablation_generator.py): two demonstrations of the game's own task type, 100 model calls,
a stop when the same step comes 5 more times in a row, no patience rule and no self-assessed
ending (a "Task failed!" thought does not end the run). Real engine, scripted models."""

from __future__ import annotations

import pytest

pytest.importorskip("adapt.envs.alfworld", exc_type=ImportError, reason="needs the alfworld extra: "
                    "pip install -e '.[alfworld]'")

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.resolve import resolve_config
from adapt.envs.alfworld import ALFWorld
from adapt.llm.base import ChatRequest
from adapt.llm.testing import FunctionModel
from tests.envs.alfworld.stateact_paper_demos import FOLDER, GAMES, demonstrations

PAPER = RunConfig.model_validate({"profile": "paper", "strategy": "react",
                                  "executor": {"kind": "stateact"}})


@pytest.mark.parametrize("task_type", list(GAMES))
def test_the_demonstrations_are_exact_for_our_environment(task_type: str) -> None:
    assert (FOLDER / f"{task_type}.txt").read_text(encoding="utf-8") == \
        demonstrations(task_type)


def test_the_paper_prompt_shows_two_demonstrations_of_the_games_type() -> None:
    env = ALFWorld()
    try:
        for task_type in GAMES:
            env.reset(seed=11, task_type=task_type, prompts="paper")
            text = env.prompt_template("stateact")
            own = (FOLDER / f"{task_type}.txt").read_text(encoding="utf-8").rstrip("\n")
            assert own in text
            assert text.count("Your task is to: ") == 2  # the two demonstrations
            others = [t for t in GAMES if t != task_type]
            for other in others:
                first = (FOLDER / f"{other}.txt").read_text(encoding="utf-8").split("\n")[2]
                assert first not in text, (task_type, other)
        env.reset(seed=11, task_type="heat")
        assert "put a hot cup in cabinet" not in env.prompt_template("stateact")  # default set
    finally:
        env.close()


def test_paper_settings_are_the_codes() -> None:
    out, _ = resolve_config(PAPER, ALFWorld)
    executor = out.executor
    assert (executor.max_steps, executor.patience, executor.self_assessment,
            executor.repeat_limit) == (100, None, "off", 5)
    assert out.react_steps == 100 and out.d_max == 3
    # other executors keep their rules
    react, _ = resolve_config(RunConfig(profile="paper"), ALFWorld)
    assert react.executor.patience == 5
    assert "repeat_limit" not in type(react.executor).model_fields  # a StateAct setting


async def run(reply: FunctionModel, config: RunConfig = PAPER) -> tuple[int, str | None]:
    env, sink = ALFWorld(), MemorySink()
    try:
        await run_task(env, {"seed": 1, "task_type": "heat"}, config, reply, sink=sink)
    finally:
        env.close()
    return len(reply.requests), sink.nodes[1].termination


def step(action: str, thought: str = "next") -> str:
    return (f"goal: heat some egg and put it in diningtable\ncurrent location: somewhere\n"
            f"current inventory: nothing\nthought: {thought}\naction: {action}")


async def test_a_hundred_model_calls_without_patience_or_claims() -> None:
    counter = iter(range(1000))

    def reply(request: ChatRequest) -> str:
        n = next(counter)
        if n % 2:  # a thought that says the task failed: no ending under paper
            return step("think", f"attempt {n}. Task failed!")
        return step("take egg 9 from fridge 1", f"attempt {n}")  # Nothing happens.

    assert await run(FunctionModel(reply)) == (100, "max_steps")
    default = RunConfig.model_validate({"strategy": "react", "d_max": 1,
                                        "executor": {"kind": "stateact"}})
    counter = iter(range(1000))
    calls, ending = await run(FunctionModel(reply), default)
    assert (calls, ending) == (2, "failed")  # the default ends on the claim


async def test_five_repetitions_of_the_same_step_stop_the_run() -> None:
    def reply(request: ChatRequest) -> str:
        return step("go to fridge 1", "I look in the fridge")

    env, sink, model = ALFWorld(), MemorySink(), FunctionModel(reply)
    try:
        await run_task(env, {"seed": 1, "task_type": "heat"}, PAPER, model, sink=sink)
    finally:
        env.close()
    steps = sink.steps[1]
    assert len(model.requests) == 6 and sink.nodes[1].termination == "repetition"
    assert [s.kind for s in steps] == ["action"] * 5 + ["thought"]  # the 6th is not executed
    assert steps[-1].error == "the same step 6 times in a row"
