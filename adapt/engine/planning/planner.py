"""The planner: one LLM call that decomposes a goal into steps and a logic expression."""

from __future__ import annotations

from adapt.engine.decoding import env_grammar, generate, planner_monitor
from adapt.engine.planning.parse import parse_plan
from adapt.engine.prompts import render
from adapt.engine.runtime import Run
from adapt.engine.tree import Node, Plan
from adapt.llm.base import ChatRequest


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
        request = ChatRequest(prompt=prompt, max_tokens=cfg.max_tokens, stop=list(cfg.stop),
                              temperature=cfg.temperature, role="planner",
                              grammar=env_grammar(run, "plan") if self.template == "planner"
                              else None)
        # the decoding monitor governs the ADaPT planner's format (not other templates')
        monitor = planner_monitor() if self.template == "planner" else None
        text, _ = await generate(run, run.planner_model, request, node, monitor)
        return parse_plan(text)
