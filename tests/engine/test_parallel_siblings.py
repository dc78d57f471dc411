"""``approval.parallel_siblings``: sibling nodes wait for decisions at the same time, the
decisions come in any order, and every attempt replays the one before it exactly (no LLM call
paid twice, the same events up to where it stopped)."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable
from typing import Any

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.approvals import ApprovalRequest, Decision
from adapt.engine.events import LLMCallMade, NodeCreated, NodeUpdated, StepAppended
from adapt.errors import AwaitingApproval
from adapt.llm.base import ChatRequest
from adapt.llm.recording import Recording, RecordingModel, ReplayCursor, ReplayModel
from adapt.llm.testing import FunctionModel, Reply
from tests.engine.toy import ToyEnv

FAIL = "think: I cannot do this. Task failed!"
DONE = "think: Task completed!"
ITEMS = [f"item {i}" for i in range(1, 9)]
PLAN = "\n".join([*(f"Step {i}: {s}" for i, s in enumerate(ITEMS, 1)),
                  "Execution Order: (" + " AND ".join(f"Step {i}" for i in range(1, 9)) + ")"])


def executor_reply(request: ChatRequest) -> str:
    """The root fails; a step ``item k`` proposes ``ok item k`` (gated), proposes again after
    a rejection, and is done once the environment did something."""
    prompt = request.as_prompt()
    goal = re.findall(r"Goal: ([^.\n]+)\.", prompt)[-1]
    if goal == "root goal":
        return FAIL
    tail = prompt[prompt.rindex(f"Goal: {goal}."):]
    if "Did " in tail:
        return DONE
    if "rejected your previous action" in tail:
        return f"ok {goal} again"
    return f"ok {goal}"


def config(parallel: bool) -> RunConfig:
    return RunConfig(d_max=2, approval={"actions": ["ok"], "parallel_siblings": parallel})


def choose(request: ApprovalRequest) -> Decision:
    """The person: items 2 and 5 are rejected once, 3 and 7 edited, the rest approved."""
    item = int(str(request.proposal["action"]).split()[2])
    if request.number == 1 and item in (2, 5):
        return Decision(decision="reject", reason=f"not {item} yet")
    if item in (3, 7):
        return Decision(decision="edit", proposal={"action": f"ok edited {item}"})
    return Decision(decision="approve")


def signature(sink: MemorySink) -> list[tuple[Any, ...]]:
    """What a database sink counts on a later attempt to repeat, in order."""
    out: list[tuple[Any, ...]] = []
    for e in sink.events:
        if isinstance(e, NodeCreated | NodeUpdated):
            out.append((type(e).__name__, e.node.id, e.node.status, e.node.success))
        elif isinstance(e, StepAppended):
            out.append(("step", e.step.node_id, e.step.index, e.step.text, e.step.observation))
        elif isinstance(e, LLMCallMade):
            out.append(("call", e.call.id, e.call.node_id, e.call.completion))
    return out


def shape(sink: MemorySink) -> dict[int, tuple[Any, ...]]:
    return {i: (n.goal, n.status, n.success,
                tuple((s.text, s.observation) for s in sink.steps.get(i, [])))
            for i, n in sorted(sink.nodes.items())}


async def straight_run() -> tuple[MemorySink, int]:
    """One run, one node at a time, the person answering each request as it comes."""
    ex, pl = FunctionModel(executor_reply, "ex"), FunctionModel(lambda r: PLAN, "pl")

    async def gate(request: ApprovalRequest) -> Decision:
        return choose(request)

    sink = MemorySink()
    result = await run_task(ToyEnv(), {"goal": "root goal"}, config(False), ex, pl,
                            sink=sink, approvals=gate)
    assert result.status == "succeeded", shape(sink)
    return sink, len(ex.requests) + len(pl.requests)


async def resumed_until_done(
    executor: Reply, planner: Reply, cfg: RunConfig, person: Callable[[ApprovalRequest], Decision],
    seed: int,
) -> tuple[MemorySink, Any, int, list[list[ApprovalRequest]], dict[str, Decision]]:
    """Run, and after each stop decide some pending requests (shuffled) and run again from the
    recording, as the service does; checks that each attempt replays the one before it."""
    ex, pl = FunctionModel(executor, "ex"), FunctionModel(planner, "pl")
    decided: dict[str, Decision] = {}
    recording = Recording()
    previous: list[tuple[Any, ...]] = []
    rng = random.Random(seed)
    waits: list[list[ApprovalRequest]] = []
    while True:
        assert len(waits) < 40
        cursor, fresh = ReplayCursor(), Recording()
        models = [RecordingModel(ReplayModel(recording, live=m, cursor=cursor), recording=fresh)
                  for m in (ex, pl)]
        sink = MemorySink()

        async def gate(request: ApprovalRequest) -> Decision | None:
            return decided.get(request.key)

        try:
            result = await run_task(ToyEnv(), {"goal": "root goal"}, cfg, models[0],
                                    models[1], sink=sink, approvals=gate)
        except AwaitingApproval as stopped:
            pending = list(stopped.requests)
        else:
            return sink, result, len(ex.requests) + len(pl.requests), waits, decided
        # every attempt repeats the one before it up to where it stopped, paying nothing again
        assert signature(sink)[:len(previous)] == previous
        assert cursor.position == len(recording.calls), "every stored call was replayed"
        previous, recording = signature(sink), fresh
        assert all(sink.nodes[r.node_id].status == "awaiting_approval" for r in pending)
        assert not any(r.key in decided for r in pending)
        waits.append(list(pending))
        rng.shuffle(pending)
        for request in pending[:1 if len(waits) % 2 else 3]:  # one decision, or several
            decided[request.key] = person(request).model_copy(update={"order": len(decided)})


async def test_eight_pending_approvals_answered_in_shuffled_order() -> None:
    straight, straight_calls = await straight_run()
    assert straight_calls == 1 + 1 + 8 * 2 + 2  # root, plan, 8 x (ok, done), 2 asked again

    sink, result, calls, waits, decided = await resumed_until_done(
        executor_reply, lambda r: PLAN, config(True), choose, 30)
    assert len(waits[0]) == 8, "8 requests pending at once"
    assert sorted(r.node_id for r in waits[0]) == list(range(2, 10))
    assert len(waits) > 4
    assert result.status == "succeeded"
    assert sorted(decided) == sorted([f"{n}:action:1" for n in range(2, 10)]
                                     + ["3:action:2", "6:action:2"])
    # the same tree as one straight run, and not one LLM call more
    assert shape(sink) == shape(straight)
    assert calls == straight_calls
    assert sink.nodes[4].status == "succeeded"
    assert sink.steps[4][0].observation == "Did edited 3."


def nested_planner(request: ChatRequest) -> str:
    """The root: three parts (AND); part k: two items, OR for part 2, AND for the others."""
    goal = re.findall(r"Goal: ([^.\n]+)\.", request.as_prompt())[-1]
    if goal == "root goal":
        return "Step 1: part 1\nStep 2: part 2\nStep 3: part 3\n" \
               "Execution Order: (Step 1 AND Step 2 AND Step 3)"
    k = goal.split()[-1]
    op = "OR" if k == "2" else "AND"
    return f"Step 1: item {k}a\nStep 2: item {k}b\nExecution Order: (Step 1 {op} Step 2)"


def nested_executor(request: ChatRequest) -> str:
    goal = re.findall(r"Goal: ([^.\n]+)\.", request.as_prompt())[-1]
    return FAIL if goal.startswith("part") else executor_reply(request)


async def test_nested_groups_wait_at_every_level() -> None:
    """A parked grandchild parks its parent too: the next part starts; an OR group stays one
    at a time. Approved in a shuffled order, resumed after each: the straight run's tree."""
    cfg = RunConfig(d_max=3, approval={"actions": ["ok"], "parallel_siblings": True})

    def approve(request: ApprovalRequest) -> Decision:
        return Decision(decision="approve")

    async def gate(request: ApprovalRequest) -> Decision:
        return approve(request)

    ex, pl = FunctionModel(nested_executor, "ex"), FunctionModel(nested_planner, "pl")
    straight = MemorySink()
    plain = await run_task(ToyEnv(), {"goal": "root goal"}, RunConfig(
        d_max=3, approval={"actions": ["ok"]}), ex, pl, sink=straight, approvals=gate)
    assert plain.status == "succeeded"

    sink, result, calls, waits, _ = await resumed_until_done(
        nested_executor, nested_planner, cfg, approve, 3)
    goals = {i: n.goal for i, n in sink.nodes.items()}
    assert sorted(goals[r.node_id] for r in waits[0]) == [
        "item 1a", "item 1b", "item 2a", "item 3a", "item 3b"]
    assert result.status == "succeeded"
    assert shape(sink) == shape(straight)
    assert calls == len(ex.requests) + len(pl.requests), "the straight run's live calls"
    assert sink.nodes[next(i for i, g in goals.items() if g == "item 2b")].status == "skipped"


async def test_a_decision_known_from_the_start_still_waits_its_turn() -> None:
    """Every request parks in the first pass, decided or not, and the decided ones go on in
    the order they were decided (not the order they were asked)."""
    order: list[int] = []

    class Env(ToyEnv):
        def step(self, action: str) -> Any:
            order.append(int(action.split()[-1]))
            return super().step(action)

    decided = {f"{n}:action:1": Decision(decision="approve", order=10 - n)
               for n in range(2, 10)}

    async def gate(request: ApprovalRequest) -> Decision | None:
        return decided.get(request.key)

    ex, pl = FunctionModel(executor_reply, "ex"), FunctionModel(lambda r: PLAN, "pl")
    sink = MemorySink()
    result = await run_task(Env(), {"goal": "root goal"}, config(True), ex, pl, sink=sink,
                            approvals=gate)
    assert result.status == "succeeded"
    assert order == [8, 7, 6, 5, 4, 3, 2, 1], "decided last-to-first: run last-to-first"


async def test_option_off_asks_one_at_a_time() -> None:
    ex, pl = FunctionModel(executor_reply, "ex"), FunctionModel(lambda r: PLAN, "pl")
    sink = MemorySink()
    with pytest.raises(AwaitingApproval) as stopped:
        await run_task(ToyEnv(), {"goal": "root goal"}, config(False), ex, pl, sink=sink)
    assert [r.key for r in stopped.value.requests] == ["2:action:1"]
    assert [n.id for n in sink.nodes.values() if n.status == "awaiting_approval"] == [2]
    assert [n.status for n in sink.nodes.values()][2:] == ["pending"] * 7


async def test_a_failed_child_stops_later_ones_from_starting() -> None:
    """AND: a child that fails before the next one starts skips the rest; children started
    already still end."""
    def reply(request: ChatRequest) -> str:
        goal = re.findall(r"Goal: ([^.\n]+)\.", request.as_prompt())[-1]
        return FAIL if goal == "item 4" else executor_reply(request)

    async def gate(request: ApprovalRequest) -> Decision:
        return Decision(decision="approve")

    sink = MemorySink()
    result = await run_task(ToyEnv(), {"goal": "root goal"}, config(True),
                            FunctionModel(reply, "ex"), FunctionModel(lambda r: PLAN, "pl"),
                            sink=sink, approvals=gate)
    assert result.status == "failed"
    statuses = {i: n.status for i, n in sink.nodes.items()}
    assert statuses == {1: "failed", 2: "succeeded", 3: "succeeded", 4: "succeeded",
                        5: "failed", 6: "skipped", 7: "skipped", 8: "skipped", 9: "skipped"}


@pytest.mark.parametrize("calls", [6, 14])
async def test_a_budget_ending_the_run_closes_the_nodes_that_wait(calls: int) -> None:
    """A budget runs out in one child while others wait (6: in the first pass, 14: after
    some decisions): the run ends budget_exceeded, no coroutine is left behind and no node
    stays awaiting_approval."""
    async def gate(request: ApprovalRequest) -> Decision:
        return Decision(decision="approve")

    sink = MemorySink()
    cfg = RunConfig(d_max=2, budget={"max_llm_calls": calls},
                    approval={"actions": ["ok"], "parallel_siblings": True})
    result = await run_task(ToyEnv(), {"goal": "root goal"}, cfg,
                            FunctionModel(executor_reply, "ex"),
                            FunctionModel(lambda r: PLAN, "pl"), sink=sink, approvals=gate)
    assert result.status == "budget_exceeded" and result.usage.llm_calls == calls
    statuses = [n.status for n in sink.nodes.values()]
    assert "awaiting_approval" not in statuses and "running" not in statuses, statuses
    assert statuses.count("succeeded") == (0 if calls == 6 else 4)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_cancelling_the_run_leaves_no_task_behind() -> None:
    """The run is cancelled from outside (a worker shutting down) while siblings are parked
    and one of them waits for its model: every coroutine of the run ends."""
    stuck = asyncio.Event()

    async def slow(request: ChatRequest) -> str:
        if "Goal: item 3." in request.as_prompt():
            stuck.set()
            await asyncio.Event().wait()  # never answers
        return executor_reply(request)

    run = asyncio.create_task(run_task(
        ToyEnv(), {"goal": "root goal"}, config(True), FunctionModel(slow, "ex"),
        FunctionModel(lambda r: PLAN, "pl"), sink=MemorySink()))
    await asyncio.wait_for(stuck.wait(), 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
