"""The engine's side of approvals: a plan stops the run at ``awaiting_approval`` until a gate
decides; approve, edit (validated strictly) and reject (the planner hears the reason)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.approvals import ApprovalConfig, ApprovalRequest, Decision
from adapt.engine.gated import action_name, needs_approval
from adapt.engine.proposals import edited_call, edited_plan
from adapt.envs.textcraft import TextCraft
from adapt.envs.tools import ToolSpec
from adapt.errors import AwaitingApproval, InvalidProposal
from adapt.llm.testing import ScriptedModel, tool_call
from adapt.sim import from_spec

SIM = "sim:textcraft?capability=1"
PLANS = RunConfig(d_max=2, approval={"plans": True})


async def test_without_a_decision_the_run_stops_at_the_plan() -> None:
    sink = MemorySink()
    with pytest.raises(AwaitingApproval) as stopped:
        await run_task(TextCraft(), {"seed": 11}, PLANS, from_spec(SIM), sink=sink)
    request = stopped.value.request
    assert (request.node_id, request.kind, request.number) == (1, "plan", 1)
    assert request.proposal["steps"] and sink.nodes[1].status == "awaiting_approval"
    assert [n.id for n in sink.nodes.values()] == [1]


async def test_approving_every_plan_changes_nothing() -> None:
    asked: list[ApprovalRequest] = []

    async def gate(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision(decision="approve")

    plain, gated = MemorySink(), MemorySink()
    a = await run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4), from_spec(SIM),
                       sink=plain)
    b = await run_task(TextCraft(), {"seed": 11}, RunConfig(d_max=4, approval={"plans": True}),
                       from_spec(SIM), sink=gated, approvals=gate)
    assert [r.key for r in asked] == ["1:plan:1", "2:plan:1"]
    assert (a.status, a.usage.llm_calls) == (b.status, b.usage.llm_calls) == ("succeeded", 15)
    assert {i: n.model_dump() for i, n in plain.nodes.items()} == {
        i: n.model_dump() for i, n in gated.nodes.items()}


async def test_a_rejection_is_planned_again_and_asked_again() -> None:
    asked: list[ApprovalRequest] = []

    async def gate(request: ApprovalRequest) -> Decision:
        asked.append(request)
        if request.number == 1:
            return Decision(decision="reject", reason="too many steps")
        return Decision(decision="approve")

    sink = MemorySink()
    await run_task(TextCraft(), {"seed": 11}, PLANS, from_spec(SIM), sink=sink,
                   approvals=gate)
    assert [r.key for r in asked] == ["1:plan:1", "1:plan:2"]
    planner = [c for c in sink.calls if c.role == "planner"]
    assert len(planner) == 2
    assert "rejected your previous plan: too many steps" in (planner[1].prompt or "")
    assert "rejected" not in (planner[0].prompt or "")


def test_an_edited_plan_is_validated_strictly() -> None:
    plan = edited_plan({"steps": ["fetch 1 stick", " craft  2 planks "],
                        "execution_order": "Step 2 or Step 1"})
    assert plan.steps == ["fetch 1 stick", "craft 2 planks"]
    assert plan.expression_text == "(Step 2 OR Step 1)"
    assert edited_plan({"steps": ["a", "b"]}).expression_text == "(Step 1 AND Step 2)"
    for bad, field in [({"steps": []}, "steps"), ({"steps": "a"}, "steps"),
                       ({"steps": ["a\nb"]}, "steps.0"), ({"steps": ["a"], "x": 1}, "x"),
                       ({"steps": ["a", "b"], "execution_order": "Step 1"}, "execution_order"),
                       ({"steps": ["a"], "execution_order": "Step 1 AND ("}, "execution_order"),
                       ({"steps": ["a"], "execution_order": 3}, "execution_order")]:
        with pytest.raises(InvalidProposal) as exc:
            edited_plan(bad)
        assert exc.value.field == field, bad


async def test_a_rejected_action_is_not_sent_and_the_executor_hears_why() -> None:
    asked: list[ApprovalRequest] = []

    async def gate(request: ApprovalRequest) -> Decision:
        asked.append(request)
        if len(asked) == 1:
            return Decision(decision="reject", reason="not that recipe")
        return Decision(decision="approve")

    sink = MemorySink()
    config = RunConfig(d_max=4, approval={"actions": ["craft"]})
    await run_task(TextCraft(), {"seed": 11}, config, from_spec(SIM), sink=sink,
                   approvals=gate)
    assert asked and all(r.kind == "action" for r in asked)
    assert all(r.proposal["name"] == "craft" for r in asked), "get is not asked about"
    first = asked[0]
    assert first.proposal["action"] == "craft 1 stick using 2 bamboo"
    steps = sink.steps[first.node_id]
    rejected = next(s for s in steps if s.text == first.proposal["action"])
    assert rejected.observation == ("A person rejected your previous action: not that recipe. "
                                    "Propose a different one.")
    after = [c for c in sink.calls if c.role == "executor" and c.node_id == first.node_id]
    assert "not that recipe" in (after[rejected.index].prompt or "")
    assert "not that recipe" not in (after[rejected.index - 1].prompt or "")


async def test_an_edited_action_is_sent_instead() -> None:
    async def gate(request: ApprovalRequest) -> Decision:
        return Decision(decision="edit", proposal={"action": "inventory"})

    sink = MemorySink()
    config = RunConfig(d_max=4, approval={"actions": ["craft"]})
    await run_task(TextCraft(), {"seed": 11}, config, from_spec(SIM), sink=sink,
                   approvals=gate)
    crafts = [s for ss in sink.steps.values() for s in ss if s.text.startswith("craft")]
    assert crafts and all(s.observation.startswith("Inventory") for s in crafts), [
        s.observation for s in crafts]


def test_which_actions_wait_for_a_person() -> None:
    class Tooled:
        def tools(self) -> list[ToolSpec]:
            return [ToolSpec("rm", "remove a file", destructive=True),
                    ToolSpec("ls", "list files", read_only=True)]

        def tool_action(self, name: str, arguments: Any) -> str:
            return name

    def run(actions: list[str]) -> Any:
        return SimpleNamespace(config=SimpleNamespace(approval=ApprovalConfig(actions=actions)),
                               env=Tooled())

    assert action_name("  Craft 1 stick using 2 bamboo") == "craft"
    assert needs_approval(run(["craft"]), "CRAFT")
    assert not needs_approval(run(["craft"]), "get")
    assert needs_approval(run(["destructive"]), "rm")
    assert not needs_approval(run(["destructive"]), "ls")
    assert not needs_approval(run([]), "rm")
    text_env = SimpleNamespace(config=SimpleNamespace(
        approval=ApprovalConfig(actions=["destructive"])), env=object())
    assert not needs_approval(text_env, "craft"), "a text environment declares no tool"


async def test_an_edited_tool_call_runs_with_the_edited_arguments() -> None:
    """The tools executor: a person fixes the arguments of a ``craft`` call; the environment
    takes the edited call, the step shows it (and keeps the model's), and the model reads the
    edited arguments with the result."""
    asked: list[ApprovalRequest] = []
    fixed = {"item": "oak planks", "count": 4, "ingredients": [{"item": "oak logs", "count": 1}]}

    async def gate(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision(decision="edit", proposal={"name": "craft", "arguments": fixed})

    wrong = {"item": "oak planks", "count": 4, "ingredients": [{"item": "oak logs", "count": 2}]}
    model = ScriptedModel([tool_call("get", {"item": "oak logs", "count": 1}),
                           tool_call("craft", wrong)])
    sink = MemorySink()
    config = RunConfig(strategy="react", d_max=1, executor={"kind": "tools"},
                       approval={"actions": ["craft"]})
    result = await run_task(TextCraft(), {"goal": "craft oak planks"}, config, model,
                            sink=sink, approvals=gate)
    (request,) = asked
    assert request.proposal["name"] == "craft" and request.proposal["arguments"] == wrong
    assert request.proposal["action"] == "craft 4 oak planks using 2 oak logs"
    assert request.proposal["schema"]["required"] == ["item", "count", "ingredients"]
    assert result.status == "succeeded", "the edited call crafted the planks"
    step = sink.steps[1][1]
    assert step.text == "craft 4 oak planks using 1 oak logs"
    assert step.observation == "Crafted 4 minecraft:oak_planks"
    assert step.extra is not None and step.extra["tool"]["arguments"] == fixed
    assert step.extra["approval"]["proposed"]["arguments"] == wrong


async def test_an_edited_tool_call_is_heard_by_the_model() -> None:
    fixed = {"item": "oak logs", "count": 2}

    async def gate(request: ApprovalRequest) -> Decision:
        return Decision(decision="edit", proposal={"arguments": fixed})

    model = ScriptedModel([tool_call("get", {"item": "oak logs", "count": 1}),
                           tool_call("task_failed", {"reason": "enough"})])
    config = RunConfig(strategy="react", d_max=1, executor={"kind": "tools"},
                       approval={"actions": ["get"]})
    sink = MemorySink()
    await run_task(TextCraft(), {"goal": "craft oak planks"}, config, model, sink=sink,
                   approvals=gate)
    assert sink.steps[1][0].observation == "Got 2 oak logs"
    told = (model.requests[1].messages or [])[-1]
    assert told.role == "tool" and told.content == (
        '(A person changed the arguments of this call to {"item": "oak logs", "count": 2}.)\n'
        "Got 2 oak logs")


def test_an_edited_tool_call_is_checked_against_the_tools_schema() -> None:
    schema = dict(TextCraft.action_tools[1].spec.parameters)
    original = {"action": "craft ...", "name": "craft", "schema": schema,
                "arguments": {"item": "a", "count": 1, "ingredients": [{"item": "b",
                                                                        "count": 1}]}}
    good = {"item": "stick", "count": 4, "ingredients": [{"item": "planks", "count": 2}]}
    assert edited_call({"name": "craft", "arguments": good}, original) == {
        "name": "craft", "arguments": good}
    for bad, field in [({"arguments": {**good, "count": 0}}, "arguments.count"),
                       ({"arguments": {"item": "stick", "count": 1}}, "arguments.ingredients"),
                       ({"arguments": {**good, "colour": "red"}}, "arguments.colour"),
                       ({"arguments": {**good, "ingredients": [{"item": "x"}]}},
                        "arguments.ingredients.0.count"),
                       ({"arguments": [1]}, "arguments"),
                       ({"name": "get", "arguments": good}, "name"),
                       ({"arguments": good, "action": "get 1 stick"}, "action"),
                       ({"arguments": good, "why": 1}, "why")]:
        with pytest.raises(InvalidProposal) as exc:
            edited_call(bad, original)
        assert exc.value.field == field, (bad, exc.value.field, str(exc.value))
