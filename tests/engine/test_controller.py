"""Controller rules (Algorithm 1) with scripted models and the toy environment."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.events import LLMCallMade, NodeCreated, StepAppended, TaskFinished
from adapt.llm.testing import ScriptedModel
from tests.engine.toy import ToyEnv

FAIL = "think: I cannot do this. Task failed!"
DONE = "think: Task completed!"


def plan(*steps: str, order: str | None = None) -> str:
    lines = [f"Step {i}: {s}" for i, s in enumerate(steps, 1)]
    if order is not None:
        lines.append(f"Execution Order: {order}")
    return "\n".join(lines)


async def go(env: ToyEnv, executor: list[str], plans: list[str] | None = None, **cfg: object):
    sink = MemorySink()
    ex, pl = ScriptedModel(executor, "ex"), ScriptedModel(plans or [], "pl")
    result = await run_task(env, {"goal": "root goal"}, RunConfig(**cfg), ex, pl, sink=sink)
    assert ex.remaining == 0, "executor script not fully used"
    assert pl.remaining == 0, "planner script not fully used"
    return result, sink, ex, pl


def shape(sink: MemorySink) -> list[tuple[int, str, int, str, str]]:
    return [(n.id, n.kind, n.depth, n.goal, n.status) for n in sorted(sink.nodes.values(),
                                                                        key=lambda n: n.id)]


async def test_dmax_1_is_the_executor_alone(env: ToyEnv) -> None:
    result, sink, _, pl = await go(env, [FAIL], d_max=1)
    assert result.status == "failed" and not result.success
    assert shape(sink) == [(1, "task", 1, "root goal", "failed")]
    assert pl.requests == []


async def test_success_at_root_needs_no_planner(env: ToyEnv) -> None:
    result, sink, _, _ = await go(env, ["ok a", DONE], d_max=3)
    assert result.status == "succeeded" and result.success
    root = sink.nodes[1]
    assert root.executor_success and root.self_assessed and root.termination == "completed"
    assert result.max_depth == 1


async def test_decomposes_only_below_dmax(env: ToyEnv) -> None:
    # d_max 2: root fails, plans two steps; step 1 fails at depth 2 and is final there.
    result, sink, _, pl = await go(env, [FAIL, FAIL], [plan("a", "b", order="(Step 1 AND Step 2)")],
                                   d_max=2)
    assert shape(sink) == [
        (1, "task", 1, "root goal", "failed"),
        (2, "task", 2, "a", "failed"),
        (3, "task", 2, "b", "skipped"),
    ]
    assert len(pl.requests) == 1
    assert result.status == "failed"


async def test_recursion_to_depth_3(env: ToyEnv) -> None:
    result, sink, _, _ = await go(
        env,
        [FAIL, FAIL, DONE, DONE, DONE],
        [plan("a", "b", order="(Step 1 AND Step 2)"), plan("a1", "a2", order="Step 1 and step 2")],
        d_max=3,
    )
    assert shape(sink) == [
        (1, "task", 1, "root goal", "succeeded"),
        (2, "task", 2, "a", "succeeded"),
        (3, "task", 2, "b", "succeeded"),
        (4, "task", 3, "a1", "succeeded"),
        (5, "task", 3, "a2", "succeeded"),
    ]
    assert sink.nodes[2].executor_success is False and sink.nodes[2].success is True
    assert result.status == "succeeded" and result.max_depth == 3


async def test_or_stops_at_first_success(env: ToyEnv) -> None:
    _, sink, _, _ = await go(env, [FAIL, DONE], [plan("a", "b", order="(Step 1 OR Step 2)")],
                             d_max=2)
    assert [n.status for n in sink.children(1)] == ["succeeded", "skipped"]
    assert sink.nodes[1].logic == "or" and sink.nodes[1].success


async def test_or_fails_when_all_fail(env: ToyEnv) -> None:
    result, sink, _, _ = await go(env, [FAIL, FAIL, FAIL],
                                  [plan("a", "b", order="(Step 1 OR Step 2)")], d_max=2)
    assert [n.status for n in sink.children(1)] == ["failed", "failed"]
    assert result.status == "failed"


async def test_nested_groups_are_not_executed_and_add_no_depth(env: ToyEnv) -> None:
    result, sink, _, _ = await go(
        env, [FAIL, DONE, FAIL, DONE],
        [plan("a", "b", "c", order="(Step 1 AND (Step 2 OR Step 3))")], d_max=2,
    )
    assert shape(sink) == [
        (1, "task", 1, "root goal", "succeeded"),
        (2, "task", 2, "a", "succeeded"),
        (3, "group", 2, "b OR c", "succeeded"),
        (4, "task", 2, "b", "failed"),
        (5, "task", 2, "c", "succeeded"),
    ]
    assert sink.nodes[3].logic == "or" and sink.nodes[3].parent_id == 1
    assert sink.nodes[4].parent_id == 3
    assert sink.steps.get(3) is None  # group nodes run no executor
    assert result.status == "succeeded"


async def test_skipped_group_marks_descendants(env: ToyEnv) -> None:
    _, sink, _, _ = await go(env, [FAIL, FAIL],
                             [plan("a", "b", "c", order="Step 1 AND (Step 2 OR Step 3)")], d_max=2)
    assert [(n.id, n.status) for n in sorted(sink.nodes.values(), key=lambda n: n.id)] == [
        (1, "failed"), (2, "failed"), (3, "skipped"), (4, "skipped"), (5, "skipped"),
    ]


async def test_fallback_plan_records_warning_on_node(env: ToyEnv) -> None:
    _, sink, _, _ = await go(env, [FAIL, DONE, DONE], [plan("a", "b", order="(Step 1 AND Step 7)")],
                             d_max=2)
    root = sink.nodes[1]
    assert root.plan is not None and root.plan.expression_text == "(Step 1 AND Step 2)"
    assert any("unknown step 7" in w for w in root.plan.warnings)
    assert [n.status for n in sink.children(1)] == ["succeeded", "succeeded"]


async def test_zero_step_plan_fails_the_node_without_looping(env: ToyEnv) -> None:
    result, sink, _, pl = await go(env, [FAIL], ["I have no idea."], d_max=3)
    assert len(pl.requests) == 1
    root = sink.nodes[1]
    assert root.status == "failed" and root.error == "the planner returned no steps"
    assert result.status == "failed" and len(sink.nodes) == 1


async def test_one_step_plan_is_retried_one_level_deeper(env: ToyEnv) -> None:
    _, sink, _, _ = await go(env, [FAIL, DONE], [plan("root goal again", order="(Step 1)")],
                             d_max=2)
    assert shape(sink)[1] == (2, "task", 2, "root goal again", "succeeded")
    assert sink.nodes[1].logic == "and"


async def test_context_propagates_to_later_executor_and_planner_prompts(env: ToyEnv) -> None:
    result, _, ex, pl = await go(
        env,
        [FAIL, "ok apple", DONE, FAIL, DONE],
        [plan("a", "b", order="(Step 1 AND Step 2)"), plan("b1", order="Step 1")],
        d_max=3,
    )
    assert result.success
    prompts = ex.prompts
    # step "a": before any success there is no context
    assert "Done:" not in prompts[1]
    # step "b" executor prompt sees the inventory-like state after "a" succeeded
    assert "Done: apple" in prompts[3]
    # planner of "b" sees it too (on by default); root planner did not
    assert "Done: apple" not in pl.prompts[0]
    assert "Done: apple" in pl.prompts[1]


async def test_context_to_planner_can_be_turned_off(env: ToyEnv) -> None:
    _, _, ex, pl = await go(
        env, [FAIL, "ok apple", DONE, FAIL, DONE],
        [plan("a", "b", order="(Step 1 AND Step 2)"), plan("b1", order="Step 1")],
        d_max=3, planner={"propagate_context": False},
    )
    assert "Done: apple" in ex.prompts[3]
    assert "Done: apple" not in pl.prompts[1]


async def test_env_reward_ends_the_episode_and_skips_the_rest(env: ToyEnv) -> None:
    result, sink, _, _ = await go(env, [FAIL, "win"], [plan("a", "b", order="(Step 1 AND Step 2)")],
                                  d_max=2)
    assert [n.status for n in sink.children(1)] == ["succeeded", "skipped"]
    assert result.success and result.reward == 1.0
    assert sink.nodes[2].termination == "reward"


async def test_events_arrive_in_order(env: ToyEnv) -> None:
    _, sink, _, _ = await go(env, ["ok a", DONE], d_max=1)
    types = [e.type for e in sink.events]
    assert types[0] == "node.created"
    assert isinstance(sink.events[-1], TaskFinished)
    first_call = next(i for i, e in enumerate(sink.events) if isinstance(e, LLMCallMade))
    first_step = next(i for i, e in enumerate(sink.events) if isinstance(e, StepAppended))
    assert first_call < first_step
    assert sum(isinstance(e, NodeCreated) for e in sink.events) == 1
    assert types.count("llm_call") == 2 and types.count("step") == 2


async def test_react_strategy_gets_max_steps_times_dmax(env: ToyEnv) -> None:
    ex = ScriptedModel(["ok x"] * 12)
    sink = MemorySink()
    cfg = RunConfig(strategy="react", d_max=3, executor={"max_steps": 4})
    result = await run_task(env, {}, cfg, ex, sink=sink)
    assert len(ex.requests) == 12 and result.status == "failed"
    assert sink.nodes[1].termination == "max_steps" and len(sink.nodes) == 1
