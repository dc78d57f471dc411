"""InterCode-Bash under the agent designs, in the real sandbox, with scripted models: the
StateFlow Bash machine, ReAct, StateAct, plan-and-execute and ADaPT (decomposition with
context propagation)."""

from __future__ import annotations

import string
from typing import Any

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.executors.stateflow.loader import load_machine
from adapt.engine.tree import Step
from adapt.envs.intercode_bash import InterCodeBash
from adapt.envs.testing import check_environment
from adapt.llm.testing import ScriptedModel

TASK = {"fs": 1, "question": "How many lines do the .c files under /testbed have?",
        "gold": 'find /testbed -name "*.c" -print0 | xargs -0 cat | wc -l'}
GOLD_CMD = 'find /testbed -name "*.c" | xargs cat | wc -l'


def reply(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


def states(steps: list[Step]) -> list[str]:
    return [(s.extra or {})["state"] for s in steps]


async def run(env: InterCodeBash, replies: list[str], strategy: str, kind: str = "react",
              config: dict[str, Any] | None = None, d_max: int = 1
              ) -> tuple[Any, MemorySink, ScriptedModel]:
    sink = MemorySink()
    model = ScriptedModel(replies)
    cfg = RunConfig(strategy=strategy, d_max=d_max, executor={"kind": kind})
    result = await run_task(env, config or TASK, cfg, model, sink=sink)
    assert model.remaining == 0, "script not fully used"
    return result, sink, model


def test_prompts_are_valid_templates(bash_env: InterCodeBash) -> None:
    for kind in ("executor", "planner", "plan_and_execute", "stateact"):
        text = bash_env.prompt_template(kind)
        assert string.Template(text).is_valid(), kind
        assert set(string.Template(text).get_identifiers()) <= {"task", "context"}, kind


def test_conformance_kit(bash_data: Any, bash_cache: Any, bash_layers: Any) -> None:
    def make() -> InterCodeBash:
        return InterCodeBash(data_dir=bash_data, cache_dir=bash_cache, timeout=10)

    report = check_environment(make, [TASK, {**TASK, "fs": 3, "gold": ["cd /", "ls"]}],
                               actions=["execute[cd /testbed]", "execute[ls]",
                                        "execute[touch new.txt]", "submit"])
    assert "prompt_templates" in report.passed
    assert "tools" in report.passed and report.tools == ["execute", "submit"]


async def test_stateflow_machine_solve_error_verify(bash_env: InterCodeBash) -> None:
    machine = load_machine("intercode_bash")
    assert set(machine.states) == {"Init", "Solve", "Verify", "Error", "End"}
    result, sink, model = await run(bash_env, [
        reply("Count the lines of the C files.", "execute[wc -l /testbed/*.cc]"),
        reply("Wrong extension; find them all.", f"execute[{GOLD_CMD}]"),
        reply("The output is one number, as asked.", "submit"),
    ], "stateflow")
    assert result.success and result.reward == 1.0
    assert states(sink.steps[1]) == ["Init", "Solve", "Error", "Verify"]
    solve, error, verify = model.prompts
    assert "Write one bash command" in solve and f"Request: Task: {TASK['question']}" in solve
    assert "Your last command failed" in error and "[exit status 1]" in error
    assert "decide whether the request is done" in verify
    assert verify.rstrip().endswith("Observation: 5")


async def test_react_executor(bash_env: InterCodeBash) -> None:
    result, sink, model = await run(bash_env, [
        "execute[cd /testbed]", f"execute[{GOLD_CMD.replace('/testbed', '.')}]", "submit",
    ], "react")
    assert result.success and result.reward == 1.0
    assert [s.observation for s in sink.steps[1]][:2] == ["(no output)", "5"]
    assert "Task: How many lines" in model.prompts[0]


async def test_stateact_executor(bash_env: InterCodeBash) -> None:
    goal = TASK["question"]
    result, _sink, model = await run(bash_env, [
        f"goal: {goal}\nworking directory: /\nthought: Count them.\naction: execute[{GOLD_CMD}]",
        f"goal: {goal}\nworking directory: /\nthought: Done.\naction: submit",
    ], "react", kind="stateact")
    assert result.success and result.reward == 1.0
    assert "working directory:" in model.prompts[0]


async def test_plan_and_execute(bash_env: InterCodeBash) -> None:
    plan = (f"Step 1: run {GOLD_CMD}\nStep 2: submit\n"
            "Execution Order: (Step 1 AND Step 2)")
    result, _sink, model = await run(bash_env, [
        plan, f"execute[{GOLD_CMD}]", "think: Counted. Task completed!", "submit",
    ], "plan_and_execute")
    assert result.reward == 1.0
    assert "one concrete bash command" in model.prompts[0]  # the plan_and_execute prompt
    assert f"Task: run {GOLD_CMD}" in model.prompts[1]      # step 1, for the executor


async def test_adapt_decomposes_and_hands_state_on(bash_env: InterCodeBash) -> None:
    config = {"fs": 2, "question": "Delete the .log files in /system/folder1, then count the "
              "files left there.",
              "gold": ["find /system/folder1 -name '*.log' -delete",
                       "find /system/folder1 -type f | wc -l"]}
    plan = ("Step 1: delete the .log files in /system/folder1\n"
            "Step 2: count the files left in /system/folder1 and submit\n"
            "Execution Order: (Step 1 AND Step 2)")
    result, _sink, model = await run(bash_env, [
        "think: This is too much at once. Task failed!",        # root executor gives up
        plan,                                                   # planner
        "execute[cd /system/folder1 && rm *.log]",              # sub-task 1
        "think: The .log files are gone. Task completed!",
        "execute[find . -type f | wc -l]",                      # sub-task 2, in folder1
        "submit",
    ], "adapt", d_max=2, config=config)
    assert result.success and result.reward == 1.0
    second = model.prompts[4]
    assert "Working directory: /system/folder1." in second  # context propagation
    assert "Last command: cd /system/folder1 && rm *.log (exit status 0)." in second


async def test_try_again_resets_the_sandbox_between_trials(bash_env: InterCodeBash) -> None:
    result, sink, _model = await run(bash_env, [
        "execute[touch /testbed/stray.txt && ls /testbed | head -n 1]", "submit",   # trial 1
        "execute[ls /testbed/stray.txt]", f"execute[{GOLD_CMD}]", "submit",         # trial 2
    ], "try_again", d_max=2)
    assert result.success and result.reward == 1.0
    trial1, trial2 = (sink.steps[n] for n in sorted(sink.steps) if sink.steps[n])
    assert 0 < trial1[-1].reward < 1.0
    assert "No such file" in trial2[0].observation  # a fresh file system for trial 2


async def test_reflexion_reflects_on_a_failed_bash_attempt(bash_env: InterCodeBash) -> None:
    reflection = "I counted per file; next time I should pipe every .c file into one wc -l."
    result, _sink, model = await run(bash_env, [
        "execute[wc -l /testbed/*.c]", "submit",            # trial 1: the wrong output
        reflection,                                         # the reflection call
        f"execute[{GOLD_CMD}]", "submit",                   # trial 2
    ], "reflexion", d_max=2)
    assert result.success and result.reward == 1.0
    reflect_prompt, trial2 = model.prompts[2], model.prompts[3]
    assert "failed attempt to do a request on a Linux machine" in reflect_prompt
    assert "> execute[wc -l /testbed/*.c]" in reflect_prompt
    assert reflect_prompt.rstrip().endswith("Reflection:")
    assert "Reflections from earlier failed attempts:" in trial2 and reflection in trial2


@pytest.mark.parametrize("profile", ["default", "paper"])
async def test_stateflow_reaches_error_in_both_observation_formats(
        bash_env: InterCodeBash, profile: str) -> None:
    """Default: Error is reached on the command's failure (the exit status), not on text only our
    format shows. Paper: as the reference (flow_bash.py), on an error phrase in InterCode's raw
    output, so a grep that finds nothing (exit status 1, no output) goes to Verify, and ls's
    "No such file or directory" to Error."""
    model = ScriptedModel([
        reply("Look for the C files.", "execute[grep -rl 'no such text' /testbed]"),
        reply("Nothing matched; count the C files instead.", "execute[ls /testbed/*.cc]"),
        reply("Wrong extension; count them all.", f"execute[{GOLD_CMD}]"),
        reply("One number, as asked.", "submit"),
    ])
    sink = MemorySink()
    result = await run_task(bash_env, TASK, RunConfig(strategy="react", d_max=1,
                                                      profile=profile,  # type: ignore[arg-type]
                                                      executor={"kind": "stateflow"}),
                            model, sink=sink)
    assert result.reward == 1.0 and model.remaining == 0
    steps = sink.steps[1]
    after_grep = "Verify" if profile == "paper" else "Error"
    assert states(steps) == ["Init", "Solve", after_grep, "Error", "Verify"]
    assert [(s.extra or {}).get("transition") for s in steps] == [
        "Solve", after_grep, "Error", "Verify", "End"]
    grep, ls = steps[1].observation, steps[2].observation
    if profile == "paper":
        assert grep == "" and "[exit status" not in ls
    else:
        assert grep.endswith("[exit status 1]") and ls.endswith("[exit status 2]")
