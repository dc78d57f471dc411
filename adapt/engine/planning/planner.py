"""The planner: one LLM call that decomposes a goal into steps and a logic expression.

With ``planner.output: "json"`` the prompt ends with an instruction to write the plan as JSON
(``prompts/json_output.txt``) and the request carries the plan's JSON schema (structured
output, where the endpoint takes one); the text format's decoding monitor and grammar are not
applied, and an answer that is not JSON is read as a text plan."""

from __future__ import annotations

from adapt.engine.decoding import env_grammar, generate, planner_monitor
from adapt.engine.planning.parse import PLAN_SCHEMA, parse_json_plan, parse_plan
from adapt.engine.prompts import render
from adapt.engine.runtime import Run
from adapt.engine.tree import Node, Plan
from adapt.envs.base import package_text
from adapt.llm.base import ChatRequest


def json_instruction() -> str:
    """What a planner asked for a JSON plan is told (after its template's own format)."""
    text = package_text(__package__ or "adapt.engine.planning", "prompts", "json_output.txt")
    if text is None:  # pragma: no cover - package data shipped with adapt
        raise FileNotFoundError("adapt.engine.planning lacks prompts/json_output.txt")
    return text


class Planner:
    def __init__(self, run: Run, *, template: str = "planner") -> None:
        self.run = run
        self.template = template

    async def plan(self, node: Node, task: str) -> Plan:
        run = self.run
        cfg = run.config.planner
        context = run.context if cfg.propagate_context else None
        # $goal: the node's goal alone (ALFWorld's paper planner asks "Goal: <goal>.")
        goal = " ".join(node.goal.split()).rstrip(".")
        prompt = render(run.env, self.template, task=task, context=context, goal=goal)
        if cfg.output == "json":
            request = ChatRequest(prompt=prompt.rstrip("\n") + "\n" + json_instruction(),
                                  max_tokens=cfg.max_tokens, stop=list(cfg.stop),
                                  temperature=cfg.temperature, role="planner",
                                  json_schema=PLAN_SCHEMA)
            text, _ = await generate(run, run.planner_model, request, node, None)
            return parse_json_plan(text)
        request = ChatRequest(prompt=prompt, max_tokens=cfg.max_tokens, stop=list(cfg.stop),
                              temperature=cfg.temperature, role="planner",
                              grammar=env_grammar(run, "plan") if self.template == "planner"
                              else None)
        # the decoding monitor governs the ADaPT planner's format (not other templates')
        monitor = planner_monitor() if self.template == "planner" else None
        text, _ = await generate(run, run.planner_model, request, node, monitor)
        return parse_plan(text)
