"""Run configs as task rows stored them before configs were resolved (issue 35, item 3), for the
tests that read old rows."""

from __future__ import annotations

from typing import Any

#: a ``run_config`` as rows stored it before configs were resolved: one flat executor with every
#: kind's fields, the cascade in executor.models, the models in the task's columns
OLD_ROW: dict[str, Any] = {
    "profile": "default", "strategy": "adapt", "d_max": 4, "react_steps": None,
    "executor": {"kind": "stateact", "spec": "react", "pass_output": "auto", "max_steps": None,
                 "patience": 8, "repeat_limit": None, "temperature": 0.0, "max_tokens": 128,
                 "act_only": False, "models": ["sim:weak", "sim:strong"], "cascade": "before",
                 "react_format": "line", "self_assessment": "thought"},
    "planner": {"temperature": 0.0, "max_tokens": 512, "stop": [], "propagate_context": True},
    "monitor": {"enabled": True, "max_corrections": 3},
    "budget": {"max_llm_calls": 200, "max_tokens": 2000000, "max_nodes": 200,
               "max_cost_usd": None, "deadline_seconds": 1800.0, "max_prompt_chars": 100000},
    "seed": None, "verification": "env", "grammar": False,
}
