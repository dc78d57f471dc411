"""The decoding monitor inside ADaPT: the executor's one action per step, the planner's format,
the per-call records in the tree, the off switch, and the simulator's continuation."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel
from adapt.sim import from_spec
from adapt.sim.continuation import continue_text, split_partial

GOAL = {"goal": "oak planks"}


async def test_two_actions_on_one_line_are_corrected_to_one() -> None:
    executor = ScriptedModel([
        "get 1 oak logs craft 4 oak planks using 1 oak logs",  # two actions
        "1 oak logs",
        "craft 4 oak planks using 1 oak logs",
    ])
    sink = MemorySink()
    result = await run_task(TextCraft(), GOAL, RunConfig(strategy="react"), executor, sink=sink)
    assert result.success and result.reward == 1.0
    assert executor.prompts[1] == executor.prompts[0] + "get "
    steps = sink.steps[1]
    assert [s.text for s in steps] == ["get 1 oak logs", "craft 4 oak planks using 1 oak logs"]
    assert steps[0].raw == "get 1 oak logs"
    assert steps[0].extra == {"monitor": {"validations": 2, "violations": 1, "corrections": 1,
                                          "uncorrected": 0}}
    assert steps[1].extra is None
    first, second, _third = sink.calls
    assert first.monitor is not None and first.monitor["kind"] == "bad_content"
    assert first.monitor["corrected"] is True and first.monitor["prefix"] == ""
    assert second.monitor == {"validations": 1, "violations": 0, "corrections": 0}
    assert result.monitor.model_dump() == {"validations": 3, "violations": 1, "corrections": 1}


async def test_with_the_monitor_off_the_malformed_line_goes_to_the_environment() -> None:
    executor = ScriptedModel([
        "get 1 oak logs craft 4 oak planks using 1 oak logs",
        "think: Task failed!",
    ])
    sink = MemorySink()
    config = RunConfig(strategy="react", monitor={"enabled": False})
    result = await run_task(TextCraft(), GOAL, config, executor, sink=sink)
    assert not result.success
    assert sink.steps[1][0].observation.startswith("Could not")
    assert all(c.monitor is None for c in sink.calls)
    assert result.monitor.validations == 0


async def test_a_plan_without_execution_order_is_completed_at_generation_time() -> None:
    # step 1 ends when the environment confirms the logs are held (verification)
    executor = ScriptedModel(["think: I cannot. Task failed!", "get 1 oak logs",
                              "craft 4 oak planks using 1 oak logs"])
    planner = ScriptedModel(["Step 1: fetch 1 oak logs\nStep 2: craft oak planks",
                             " (Step 1 AND Step 2)"])
    sink = MemorySink()
    config = RunConfig(d_max=2)
    result = await run_task(TextCraft(), GOAL, config, executor, planner, sink=sink)
    assert planner.prompts[1].endswith("Step 2: craft oak planks\nExecution Order:")
    root = sink.nodes[1]
    assert root.plan is not None and root.plan.warnings == []
    assert root.plan.expression_text == "(Step 1 AND Step 2)"
    assert result.success
    planner_calls = [c for c in sink.calls if c.role == "planner"]
    assert planner_calls[0].monitor is not None
    assert planner_calls[0].monitor["kind"] == "incomplete"
    assert planner_calls[0].monitor["prefix"] == "\nExecution Order:"


async def test_plan_and_execute_plans_are_not_held_to_the_adapt_format() -> None:
    planner = ScriptedModel(["1. fetch 1 oak logs\n2. craft oak planks"])
    executor = ScriptedModel(["get 1 oak logs", "craft 4 oak planks using 1 oak logs"])
    sink = MemorySink()
    await run_task(TextCraft(), GOAL, RunConfig(strategy="plan_and_execute"), executor, planner,
                   sink=sink)
    assert len(planner.requests) == 1
    assert [c.monitor for c in sink.calls if c.role == "planner"] == [None]


def test_the_simulator_continues_a_cut_executor_line() -> None:
    prompt = "Crafting commands:\ncraft 4 oak planks using 1 oak logs\n\nGoal: craft oak planks.\n> "
    assert split_partial(prompt) is None
    assert split_partial(prompt + "get ") == (prompt, "get ")
    assert continue_text("get 1 oak logs", "get ") == "1 oak logs"


def test_the_simulator_continues_a_cut_plan() -> None:
    prompt = "Crafting commands:\ncraft 4 oak planks using 1 oak logs\n\nGoal: craft oak planks.\n"
    partial = "Step 1: fetch 1 oak logs\n"
    assert split_partial(prompt + partial) == (prompt, partial)
    plan = "Step 1: fetch 1 oak logs\nStep 2: craft oak planks\nExecution Order: (Step 1 AND Step 2)"
    assert continue_text(plan, partial) == plan[len(partial):]
    cut = "Step 1: fetch 1 oak logs\nStep 2: craft oak planks\nExecution Order:"
    assert continue_text(plan, cut) == " (Step 1 AND Step 2)"
    # a plan written without the order line is still completed when forced
    assert continue_text("Step 1: a\nStep 2: b", "Step 1: a\nStep 2: b\nExecution Order:") == \
        " (Step 1 AND Step 2)"


async def test_the_monitor_saves_nodes_on_a_noisy_simulated_model() -> None:
    """With many format errors, the monitor's corrections turn into successes and fewer nodes."""
    from adapt.eval.monitor_savings import run_monitor_bench

    bench = await run_monitor_bench(rates=[0.4], limit=30, concurrency=4)
    off, on = bench.rows
    assert not off.monitor and on.monitor
    assert off.violations == 0 and on.violations > 0 and on.corrections > 0
    assert on.success_rate > off.success_rate
    assert on.nodes_per_task < off.nodes_per_task
    assert (bench.nodes_saved("adapt", 0.4) or 0) > 0


async def test_the_simulator_fixes_its_format_error_when_resumed() -> None:
    model = from_spec("sim:textcraft?capability=2&format_error_rate=1")
    sink = MemorySink()
    # every first draft is malformed; every resumed continuation redraws its format
    await run_task(TextCraft(), {"seed": 5}, RunConfig(strategy="react"), model, sink=sink)
    assert any(c.monitor and c.monitor.get("corrected") for c in sink.calls)
