"""The baselines (plan_and_execute, try_again, reflexion) with scripted models and the toy env."""

from __future__ import annotations

from typing import Any

import pytest

from adapt.engine import MemorySink, RunConfig, available_strategies, run_task
from adapt.engine.strategies.trials import REFLECTIONS_HEADER
from adapt.errors import UserError
from adapt.llm.testing import FunctionModel, ScriptedModel
from tests.engine.toy import ToyEnv

FAIL = "think: I cannot do this. Task failed!"
DONE = "think: Task completed!"


class TrialEnv(ToyEnv):
    """The toy env with the baselines' templates; counts resets."""

    def __init__(self) -> None:
        super().__init__()
        self.resets = 0
        self.reset_configs: list[dict[str, Any]] = []

    def reset(self, **config: Any) -> str:
        self.resets += 1
        self.reset_configs.append(dict(config))
        return super().reset(**config)

    def prompt_template(self, kind: str) -> str:
        if kind == "plan_and_execute":
            return "DETAILED PLAN\n$task\n$context\n"
        if kind == "reflection":
            return "REFLECT\n$task\n$context\nFailed attempt:\n$trajectory\nReflection:"
        return super().prompt_template(kind)


@pytest.fixture
def tenv() -> TrialEnv:
    return TrialEnv()


def plan(*steps: str, order: str) -> str:
    lines = [f"Step {i}: {s}" for i, s in enumerate(steps, 1)]
    return "\n".join([*lines, f"Execution Order: {order}"])


async def go(
    env: ToyEnv, strategy: str, ex_script: list[str], pl_script: list[str] | None = None,
    **cfg: Any,
) -> tuple[Any, MemorySink, ScriptedModel, ScriptedModel]:
    sink = MemorySink()
    ex, pl = ScriptedModel(ex_script, "ex"), ScriptedModel(pl_script or [], "pl")
    result = await run_task(env, {"goal": "root goal"}, RunConfig(strategy=strategy, **cfg), ex,
                            pl, sink=sink)
    assert ex.remaining == 0, "executor script not fully used"
    assert pl.remaining == 0, "planner script not fully used"
    return result, sink, ex, pl


def shape(sink: MemorySink) -> list[tuple[int, str, int, str | None, str]]:
    return [(n.id, n.kind, n.depth, n.label, n.status)
            for n in sorted(sink.nodes.values(), key=lambda n: n.id)]


def test_strategies_are_listed() -> None:
    assert {"adapt", "react", "plan_and_execute", "try_again", "reflexion"} <= set(
        available_strategies()
    )


# -- plan and execute -----------------------------------------------------------------------
async def test_plan_and_execute_plans_first_and_executes_each_step_once(tenv: TrialEnv) -> None:
    result, sink, ex, pl = await go(
        tenv, "plan_and_execute", ["ok a", DONE, DONE],
        [plan("a", "b", order="(Step 1 AND Step 2)")], d_max=4,
    )
    assert result.status == "succeeded" and result.max_depth == 2
    root = sink.nodes[1]
    assert root.termination == "planned" and root.steps_count == 0
    assert root.plan is not None and root.plan.steps == ["a", "b"] and root.logic == "and"
    assert [(n.goal, n.depth, n.status) for n in sink.children(1)] == [
        ("a", 2, "succeeded"), ("b", 2, "succeeded"),
    ]
    assert pl.prompts[0].startswith("DETAILED PLAN\nGoal: root goal.")
    assert [r.role for r in pl.requests] == ["planner"]
    # the root is not executed: the first executor prompt is step a's
    assert ex.prompts[0].startswith("EXECUTOR\nGoal: a.")
    # the salient state still propagates between steps
    assert "Done: a" in ex.prompts[2]


async def test_plan_and_execute_never_recurses_and_skips_after_and_failure(
    tenv: TrialEnv,
) -> None:
    result, sink, _, pl = await go(
        tenv, "plan_and_execute", [FAIL], [plan("a", "b", "c", order="(Step 1 AND Step 2 AND "
                                                                   "Step 3)")], d_max=4,
    )
    assert len(pl.requests) == 1  # the failed step a was not planned
    assert [(n.goal, n.status) for n in sink.children(1)] == [
        ("a", "failed"), ("b", "skipped"), ("c", "skipped"),
    ]
    assert result.status == "failed" and sink.nodes[2].termination == "failed"
    assert len(sink.nodes) == 4


async def test_plan_and_execute_nested_groups(tenv: TrialEnv) -> None:
    result, sink, _, _ = await go(
        tenv, "plan_and_execute", [DONE, FAIL, DONE],
        [plan("a", "b", "c", order="(Step 1 AND (Step 2 OR Step 3))")],
    )
    assert shape(sink) == [
        (1, "task", 1, None, "succeeded"),
        (2, "task", 2, None, "succeeded"),
        (3, "group", 2, None, "succeeded"),
        (4, "task", 2, None, "failed"),
        (5, "task", 2, None, "succeeded"),
    ]
    assert sink.nodes[3].logic == "or" and result.success


async def test_plan_and_execute_empty_plan_fails(tenv: TrialEnv) -> None:
    result, sink, _, _ = await go(tenv, "plan_and_execute", [], ["no idea"])
    assert result.status == "failed" and len(sink.nodes) == 1
    assert sink.nodes[1].error == "the planner returned no steps"


async def test_plan_and_execute_without_template_is_a_user_error(env: ToyEnv) -> None:
    sink = MemorySink()
    model = ScriptedModel([])
    with pytest.raises(UserError, match="plan_and_execute"):
        await run_task(env, {}, RunConfig(strategy="plan_and_execute"), model, sink=sink)
    assert sink.nodes == {} and model.requests == []


# -- try again --------------------------------------------------------------------------------
async def test_try_again_runs_dmax_independent_trials(tenv: TrialEnv) -> None:
    result, sink, ex, _ = await go(tenv, "try_again", ["ok a", FAIL, "ok b", FAIL, "ok c", FAIL],
                                   d_max=3, executor={"temperature": 0.2})
    assert shape(sink) == [
        (1, "group", 1, None, "failed"),
        (2, "task", 1, "trial 1", "failed"),
        (3, "task", 1, "trial 2", "failed"),
        (4, "task", 1, "trial 3", "failed"),
    ]
    assert sink.nodes[1].logic == "or" and sink.children(1)[0].parent_id == 1
    assert result.status == "failed" and result.max_depth == 1
    # reset by run_task, then before trials 2 and 3, always to the task's start
    assert tenv.resets == 3 and tenv.reset_configs == [{"goal": "root goal"}] * 3
    assert tenv.done_items == ["c"]
    assert [r.temperature for r in ex.requests] == [0.2, 0.2, 0.7, 0.7, 0.7, 0.7]
    assert all(p.startswith("EXECUTOR\nGoal: root goal.\n\n> ") for p in ex.prompts[::2])


async def test_try_again_stops_at_the_first_success(tenv: TrialEnv) -> None:
    result, sink, ex, _ = await go(tenv, "try_again", [FAIL, "win"], d_max=4)
    assert result.success and result.reward == 1.0 and result.max_depth == 1
    assert [(n.label, n.status) for n in sink.children(1)] == [
        ("trial 1", "failed"), ("trial 2", "succeeded"),
    ]
    assert sink.nodes[1].status == "succeeded"
    assert [r.temperature for r in ex.requests] == [0.0, 0.7]


async def test_try_again_restores_the_config_temperature(tenv: TrialEnv) -> None:
    from adapt.engine.runtime import Run
    from adapt.engine.strategies.trials import try_again_strategy

    model = ScriptedModel([FAIL, FAIL])
    run = Run(tenv, RunConfig(d_max=2), model, env_config={"goal": "g"})
    assert run.env_config == {"goal": "g"}
    tenv.reset(goal="g")
    await try_again_strategy(run, "g", "Goal: g.")
    assert run.config.executor.temperature == 0.0


async def test_try_again_budget_stops_the_trial_loop(tenv: TrialEnv) -> None:
    sink = MemorySink()
    model = ScriptedModel(["ok a", FAIL, "ok b"])
    cfg = RunConfig(strategy="try_again", d_max=3, budget={"max_llm_calls": 3})
    result = await run_task(tenv, {}, cfg, model, sink=sink)
    assert result.status == "budget_exceeded" and result.budget_exceeded == "llm_calls"
    assert len(model.requests) == 3
    assert [(n.label, n.status) for n in sink.children(1)] == [
        ("trial 1", "failed"), ("trial 2", "failed"),
    ]
    assert sink.nodes[1].status == "failed"


# -- reflexion --------------------------------------------------------------------------------
def reflexion_model(reflections: list[str]) -> FunctionModel:
    """Executor: ``ok a`` then fails; reflection calls get the next scripted reflection."""
    executor_lines = iter(["ok a", FAIL, "ok b", FAIL, "win"])
    texts = iter(reflections)

    def reply(request: Any) -> str:
        return next(texts) if request.role == "reflection" else next(executor_lines)

    return FunctionModel(reply)


async def test_reflexion_feeds_the_reflection_into_the_next_trial(tenv: TrialEnv) -> None:
    sink = MemorySink()
    model = reflexion_model(["I did a but not the goal.\nTry win.", "Second: just win."])
    cfg = RunConfig(strategy="reflexion", d_max=3, executor={"temperature": 0.3})
    result = await run_task(tenv, {"goal": "root goal"}, cfg, model, sink=sink)
    assert result.success and result.max_depth == 1
    roles = [r.role for r in model.requests]
    assert roles == ["executor", "executor", "reflection", "executor", "executor", "reflection",
                     "executor"]
    # the reflection prompt: template, task and the failed trajectory
    first = model.prompts[2]
    assert first.startswith("REFLECT\nGoal: root goal.\n")
    assert "Failed attempt:\n> ok a\nDid a.\n> " + FAIL + "\nOK.\n" in first
    assert first.endswith("Reflection:")
    # trial 2's executor prompt carries the (one-line) reflection, clearly labelled
    block = REFLECTIONS_HEADER + "\n- I did a but not the goal. Try win."
    assert block in model.prompts[3]
    # trial 3 gets both, and the second reflection prompt saw the first one as context
    assert block + "\n- Second: just win." in model.prompts[6]
    assert block in model.prompts[5]
    # stored on the trial nodes, visible in the tree
    trials = sink.children(1)
    assert [t.label for t in trials] == ["trial 1", "trial 2", "trial 3"]
    assert trials[0].context_out == "I did a but not the goal. Try win."
    assert trials[1].context_in == block
    assert trials[2].status == "succeeded"
    reflection_calls = [c for c in sink.calls if c.role == "reflection"]
    assert [c.node_id for c in reflection_calls] == [trials[0].id, trials[1].id]
    assert tenv.resets == 3
    # reflexion keeps the configured temperature
    assert {r.temperature for r in model.requests if r.role == "executor"} == {0.3}


async def test_reflexion_no_reflection_after_the_last_trial(tenv: TrialEnv) -> None:
    sink = MemorySink()
    model = reflexion_model(["Do better."])
    cfg = RunConfig(strategy="reflexion", d_max=2)
    result = await run_task(tenv, {}, cfg, model, sink=sink)
    assert not result.success and result.status == "failed"
    assert [r.role for r in model.requests].count("reflection") == 1
    assert [n.status for n in sink.children(1)] == ["failed", "failed"]
    assert sink.children(1)[1].context_out is None
    assert result.usage_by_role["reflection"].llm_calls == 1


async def test_reflexion_uses_the_planner_model(tenv: TrialEnv) -> None:
    ex = ScriptedModel([FAIL, DONE], "ex")
    pl = ScriptedModel(["Nothing worked."], "pl")
    result = await run_task(tenv, {}, RunConfig(strategy="reflexion", d_max=2), ex, pl)
    assert result.success and [r.role for r in pl.requests] == ["reflection"]


async def test_reflexion_budget_stops_the_trial_loop(tenv: TrialEnv) -> None:
    sink = MemorySink()
    model = reflexion_model(["x"])
    cfg = RunConfig(strategy="reflexion", d_max=3, budget={"max_llm_calls": 3})
    result = await run_task(tenv, {}, cfg, model, sink=sink)
    assert result.status == "budget_exceeded" and len(model.requests) == 3
    assert [r.role for r in model.requests][-1] == "reflection"
    # trial 2 was created, but its first call was refused
    trials = sink.children(1)
    assert [(t.status, t.steps_count) for t in trials] == [("failed", 2), ("failed", 0)]
    assert "budget exceeded" in (trials[1].error or "")


async def test_reflexion_without_template_is_a_user_error(env: ToyEnv) -> None:
    with pytest.raises(UserError, match="reflection"):
        await run_task(env, {}, RunConfig(strategy="reflexion"), ScriptedModel([]))
