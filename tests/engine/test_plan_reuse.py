"""Plan reuse in the engine (``reuse.plans``): a decomposition enters the library only when the
environment confirmed the decomposed goal once its sub-tasks ran; a stored plan is taken with
no planner call and says where it came from (``plans_mode: reuse``) or is shown to the planner
(``example``); a reused plan that fails is demoted, then dropped."""

from __future__ import annotations

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.approvals import ApprovalRequest, Decision
from adapt.engine.experience import DROP_AFTER, PLAN, MemoryLibrary
from adapt.engine.reuse import PLAN_EXAMPLE
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel
from tests.engine.test_experience import BEEHIVE, PLANKS, SOLVE

CRAFT = "craft 1 beehive using 6 oak planks, 3 honeycomb"
STEPS = ["fetch 3 honeycomb", PLANKS, PLANKS, CRAFT]
ORDER = "(Step 1 AND Step 2 AND Step 3 AND Step 4)"
BEEHIVE_PLAN = "\n".join(f"Step {i}: {s}" for i, s in enumerate(STEPS, 1)) + (
    f"\nExecution Order: {ORDER}")
#: the executor: the root gives up, then each sub-task is solved
SOLVING = ["think: Task failed.", "get 3 honeycomb", *SOLVE, *SOLVE, CRAFT]
PLANS = RunConfig(d_max=2, reuse={"plans": True})


async def run(library: MemoryLibrary, task: str, executor: list[str], planner: list[str],
              config: RunConfig = PLANS) -> tuple[MemorySink, ScriptedModel, bool]:
    sink = MemorySink()
    planner_model = ScriptedModel(planner)
    result = await run_task(TextCraft(), BEEHIVE, config, ScriptedModel(executor),
                            planner_model, sink=sink, library=library.for_task(task))
    assert planner_model.remaining == 0
    return sink, planner_model, result.success


async def test_a_confirmed_decomposition_is_kept_and_reused_with_no_planner_call() -> None:
    library = MemoryLibrary()
    sink, _, ok = await run(library, "first", SOLVING, [BEEHIVE_PLAN])
    assert ok and sink.nodes[1].verdict == "confirmed" and sink.nodes[1].plan.reused is None
    assert sink.nodes[1].usage.llm_calls == 2  # its executor run and the planner
    # plans only: the plan is kept, no skill (reuse.skills is off)
    [entry] = library.entries.values()
    assert (entry.kind, entry.goal, entry.actions, entry.logic) == (
        PLAN, "craft beehive", tuple(STEPS), ORDER)
    assert entry.origin == {"task": "first", "node": 1} and entry.simulated

    # the next task: the planner is not called (its script is empty), the plan says where
    # it came from, and the environment's verdict counts a use
    sink, planner, ok = await run(library, "second", SOLVING, [])
    root = sink.nodes[1]
    assert ok and root.verdict == "confirmed" and not planner.requests
    assert root.plan is not None and root.plan.steps == STEPS
    assert root.plan.reused == {"mode": "reuse", "entry": entry.id, "task": "first",
                                "node": 1, "simulated": True}
    assert root.usage.llm_calls == 1  # its executor run; no planner call
    assert [n.goal for n in sink.nodes.values() if n.depth == 2] == STEPS
    assert (entry.uses, entry.failures) == (1, 0) and len(library.entries) == 1


async def test_nothing_is_kept_without_a_confirmed_decomposition() -> None:
    library = MemoryLibrary()
    # the sub-task claims success without doing anything: refuted, the root is not confirmed
    one = f"Step 1: {PLANKS}\nExecution Order: (Step 1)"
    await run(library, "claims", ["think: Task failed.", "think: Task completed!"], [one])
    assert library.entries == {}
    # plan reuse off: a confirmed decomposition is not kept
    await run(library, "off", SOLVING, [BEEHIVE_PLAN], RunConfig(d_max=2))
    assert library.entries == {}
    # verification off: no verdict, no reuse
    await run(library, "unverified", [*SOLVING, *["think: Task completed!"] * 4],
              [BEEHIVE_PLAN], RunConfig(d_max=2, reuse={"plans": True}, verification="off"))
    assert library.entries == {}


async def test_a_reused_plan_that_fails_is_demoted_and_the_planner_plans_again() -> None:
    library = MemoryLibrary()
    await run(library, "first", SOLVING, [BEEHIVE_PLAN])
    [entry] = library.entries.values()
    entry.actions, entry.logic = (PLANKS,), "(Step 1)"  # stale: planks alone make no beehive
    rest = ["get 3 honeycomb", *SOLVE, CRAFT]  # what the fresh plan's sub-tasks still need
    for n in range(1, DROP_AFTER + 1):
        sink, planner, ok = await run(library, f"stale {n}",
                                      ["think: Task failed.", *SOLVE, *rest], [BEEHIVE_PLAN])
        root = sink.nodes[1]
        # the stale plan ran first (its one sub-task), was refuted, and the planner's plan
        # then solved the goal from where it left off: the environment's word on each
        assert ok and root.verdict == "confirmed" and len(planner.requests) == 1
        kids = [k for k in sink.nodes.values() if k.parent_id == 1]
        assert [k.goal for k in kids] == [PLANKS, *STEPS]
        assert [k.position for k in kids] == list(range(5))
        assert root.plan.reused is None and root.plan.steps == STEPS
        assert f"library entry {entry.id}" in root.plan.warnings[-1]
        refuted = [e for e in sink.events if e.type == "node.updated"
                   and e.node.id == 1 and e.node.verdict == "refuted"]
        assert refuted  # the stale plan's verdict, before the fresh plan's
        assert (entry.failures, entry.failure_streak, entry.uses) == (n, n, 0)
    assert entry.dropped
    # dropped: never taken again; the goal's plan that worked takes its place
    [fresh] = [e for e in library.entries.values() if not e.dropped]
    assert fresh.actions == tuple(STEPS) and fresh.origin["task"] == f"stale {DROP_AFTER}"
    sink, planner, ok = await run(library, "fresh", SOLVING, [])
    assert ok and sink.nodes[1].plan.reused["entry"] == fresh.id and not planner.requests


async def test_example_mode_shows_the_stored_plan_to_the_planner() -> None:
    library = MemoryLibrary()
    await run(library, "first", SOLVING, [BEEHIVE_PLAN])
    [entry] = library.entries.values()
    config = RunConfig(d_max=2, reuse={"plans": True, "plans_mode": "example"})
    sink, planner, ok = await run(library, "second", SOLVING, [BEEHIVE_PLAN], config)
    [request] = planner.requests
    prompt = request.as_prompt()
    assert PLAN_EXAMPLE.split("{")[0] in prompt and f"\n  4. {CRAFT}\n" in prompt
    assert f"  in the order {ORDER}" in prompt
    assert ok and sink.nodes[1].plan.reused == {
        "mode": "example", "entry": entry.id, "task": "first", "node": 1, "simulated": True}
    # an example is not a reuse: the entry's counts are unchanged
    assert (entry.uses, entry.failures) == (0, 0) and len(library.entries) == 1


async def test_skills_and_plans_are_kept_apart() -> None:
    library = MemoryLibrary()
    both = RunConfig(d_max=2, reuse={"skills": True, "plans": True})
    await run(library, "first", SOLVING, [BEEHIVE_PLAN], both)
    plans = [e.goal for e in library.entries.values() if e.kind == PLAN]
    skills = {e.goal for e in library.entries.values() if e.kind == "skill"}
    assert plans == ["craft beehive"] and {PLANKS, "craft beehive"} <= skills
    # skills only: the root's skill is replayed; the plan entry is never looked at
    sink, planner, ok = await run(library, "second", [], [], RunConfig(
        d_max=2, reuse={"skills": True}))
    assert ok and sink.nodes[1].termination == "reused" and not planner.requests


async def test_a_stored_plan_waits_for_a_person_where_plans_do() -> None:
    library = MemoryLibrary()
    await run(library, "first", SOLVING, [BEEHIVE_PLAN])
    [entry] = library.entries.values()
    asked: list[ApprovalRequest] = []

    async def reject_once(request: ApprovalRequest) -> Decision:
        asked.append(request)
        if request.number == 1:
            return Decision(decision="reject", reason="not that one")
        return Decision(decision="approve")

    gated = RunConfig(d_max=2, reuse={"plans": True}, approval={"plans": True})
    sink = MemorySink()
    planner = ScriptedModel([BEEHIVE_PLAN])
    result = await run_task(TextCraft(), BEEHIVE, gated, ScriptedModel(SOLVING), planner,
                            sink=sink, library=library.for_task("second"),
                            approvals=reject_once)
    # the stored plan was asked about first; rejected, the planner's plan replaced it
    assert result.success and [r.key for r in asked] == ["1:plan:1", "1:plan:2"]
    assert asked[0].proposal["steps"] == STEPS and len(planner.requests) == 1
    assert "not that one" in planner.requests[0].as_prompt()
    assert sink.nodes[1].plan.reused is None
    assert (entry.uses, entry.failures) == (0, 0)  # not taken: nothing counts
