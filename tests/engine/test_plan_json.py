"""``planner.output: "json"``: the planner asks for its plan as structured output (the plan's
JSON schema with the request, an instruction after the prompt) and reads a JSON plan with the
text plan's rules; an answer that is not JSON falls back to the text parser."""

from __future__ import annotations

import json

from adapt.engine import MemorySink, RunConfig, run_task
from adapt.engine.planning.parse import PLAN_SCHEMA, parse_json_plan
from adapt.envs.textcraft import TextCraft
from adapt.llm.testing import ScriptedModel, tool_call
from adapt.sim import from_spec

PLAN = {"thought": "fetch, then craft",
        "steps": ["fetch 1 oak logs", "craft 4 oak planks using 1 oak logs"],
        "execution_order": "(Step 1 AND Step 2)"}


def test_a_json_plan_is_read_with_the_text_plans_rules() -> None:
    plan = parse_json_plan(json.dumps(PLAN))
    assert plan.steps == PLAN["steps"] and plan.expression_text == "(Step 1 AND Step 2)"
    assert plan.warnings == [] and plan.raw == json.dumps(PLAN)
    fenced = parse_json_plan(f"```json\n{json.dumps({**PLAN, 'execution_order': 'Step 2 OR Step 1'})}\n```")
    assert fenced.expression_text == "(Step 2 OR Step 1)"
    no_order = parse_json_plan(json.dumps({"steps": ["a", "b"]}))
    assert no_order.expression_text == "(Step 1 AND Step 2)"
    assert any("no 'Execution Order:'" in w for w in no_order.warnings)
    assert parse_json_plan(json.dumps({"steps": []})).steps == []


def test_an_answer_that_is_not_json_is_read_as_a_text_plan() -> None:
    plan = parse_json_plan("Step 1: fetch 1 oak logs\nExecution Order: (Step 1)")
    assert plan.steps == ["fetch 1 oak logs"]
    assert plan.warnings[0] == "the planner's answer is not a JSON plan; it was read as a text plan"
    assert parse_json_plan('{"steps": "one"}').warnings[0].startswith("the planner's answer")


def test_the_schema_is_strict_mode_shaped() -> None:
    assert PLAN_SCHEMA["additionalProperties"] is False
    assert set(PLAN_SCHEMA["required"]) == set(PLAN_SCHEMA["properties"])


async def test_the_planner_asks_for_json_and_adapt_runs_the_plan() -> None:
    model = ScriptedModel([tool_call("task_failed", {"reason": "hard"}), json.dumps(PLAN),
                           tool_call("get", {"item": "oak logs", "count": 1}),
                           tool_call("craft", {"item": "oak planks", "count": 4, "ingredients": [
                               {"item": "oak logs", "count": 1}]})])
    sink = MemorySink()
    config = RunConfig(d_max=2, executor={"kind": "tools"}, planner={"output": "json"})
    result = await run_task(TextCraft(), {"goal": "craft oak planks"}, config, model, sink=sink)
    assert result.status == "succeeded"
    planner = model.requests[1]
    assert planner.role == "planner" and planner.json_schema == PLAN_SCHEMA
    assert planner.grammar is None
    assert (planner.prompt or "").rstrip().endswith("with AND and OR.")
    assert '"execution_order"' in (planner.prompt or "")
    root = sink.nodes[1]
    assert root.plan is not None and root.plan.steps == PLAN["steps"]


async def test_text_output_is_unchanged_by_default() -> None:
    model = ScriptedModel(["think: hard. Task failed!",
                           "Step 1: fetch 1 oak logs\nExecution Order: (Step 1)",
                           "get 1 oak logs"])
    await run_task(TextCraft(), {"goal": "craft oak planks"}, RunConfig(d_max=2), model)
    assert model.requests[1].json_schema is None
    assert "JSON" not in (model.requests[1].prompt or "")


async def test_the_simulator_plans_in_json_and_adapt_succeeds() -> None:
    model = from_spec("sim:textcraft?capability=1")
    for kind in ("react", "tools"):
        sink = MemorySink()
        config = RunConfig(d_max=4, executor={"kind": kind}, planner={"output": "json"})
        result = await run_task(TextCraft(), {"seed": 5}, config, model, sink=sink)
        assert result.status == "succeeded", kind
        plans = [n.plan for n in sink.nodes.values() if n.plan is not None]
        assert plans and all(p.raw.startswith("{") and not p.warnings for p in plans)
