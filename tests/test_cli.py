"""`adapt run` end to end, as a user runs it (subprocess, simulated model, no network)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

EXAMPLE = ["run", "--env", "textcraft", "--config", '{"seed": 5}', "--d-max", "4",
           "--model", "sim:textcraft?capability=1", "--json"]


def adapt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "120", **(env or {})}
    full_env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "adapt.cli", *args], capture_output=True,
                          text=True, env=full_env, timeout=120)


def walk(node: dict) -> list[dict]:  # type: ignore[type-arg]
    return [node, *(n for c in node["children"] for n in walk(c))]


def test_readme_example_decomposes_and_succeeds() -> None:
    out = adapt(*EXAMPLE)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["result"]["status"] == "succeeded" and payload["result"]["reward"] == 1.0
    nodes = walk(payload["tree"])
    assert max(n["depth"] for n in nodes) > 1, "expected decomposition"
    assert all("steps" in n for n in nodes)
    calls = [c for n in nodes for c in n["llm_calls"]]
    assert len(calls) == payload["result"]["usage"]["llm_calls"]
    assert payload["models"]["executor"]["simulated"] is True


def test_no_model_and_no_key_uses_the_simulator_and_says_so() -> None:
    out = adapt("run", "--config", '{"seed": 5}', "--d-max", "4", "--json")
    assert out.returncode == 0, out.stderr
    assert "SIMULATED" in out.stderr
    assert json.loads(out.stdout)["models"]["planner"]["simulated"] is True


def test_live_view_shows_tree_and_summary() -> None:
    out = adapt(*EXAMPLE[:-1])
    assert out.returncode == 0, out.stderr
    assert "succeeded" in out.stdout and "LLM calls" in out.stdout and "d2 " in out.stdout


def test_bad_config_json_is_a_clear_error() -> None:
    out = adapt("run", "--config", "{seed: 5}")
    assert out.returncode == 2
    assert "--config is not valid JSON" in out.stderr and "Traceback" not in out.stderr


def test_invalid_config_names_the_field() -> None:
    out = adapt("run", "--config", '{"seed": "five"}')
    assert out.returncode == 2 and "seed" in out.stderr and "Traceback" not in out.stderr


def test_unknown_environment_lists_available() -> None:
    out = adapt("run", "--env", "nope")
    assert out.returncode == 2 and "textcraft" in out.stderr and "Traceback" not in out.stderr


def test_remote_model_is_refused_without_permission() -> None:
    out = adapt("run", "--model", "openai:gpt-4o-mini", env={"ADAPT_OPENAI_API_KEY": "sk-x"})
    assert out.returncode == 2 and "ADAPT_ALLOW_REMOTE_LLM" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_model_spec() -> None:
    out = adapt("run", "--model", "foo:bar")
    assert out.returncode == 2 and "openai:" in out.stderr and "Traceback" not in out.stderr


def test_error_messages_keep_square_brackets() -> None:
    out = adapt("run", "--config", '{"seed": 5, "[x]": 1}')
    assert out.returncode == 2 and "[x]" in out.stderr


def test_bench_alfworld_without_the_extra_says_how_to_install_it() -> None:
    """With the extra missing (simulated here), a clean exit 2 naming the install command."""
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'textworld' else real(n, *a)\n"
        "from adapt.cli import main\n"
        "sys.argv = ['adapt', 'bench', 'alfworld', '--limit', '1']\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "300"})
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    # textworld is named among the missing modules (all of them when the extra is absent)
    missing = re.search(r"not installed: ([^)]*)\)", out.stderr)
    assert missing and "textworld" in missing.group(1).split(", "), out.stderr
    assert '.[alfworld]"' in out.stderr


def test_a_model_over_http_leaves_no_unclosed_connections(
        sim_factory: Callable[..., Any]) -> None:
    """The model clients' HTTP connections are closed with the run (not left to the garbage
    collector, whose warnings would end the output)."""
    sim = sim_factory()
    for extra in ((), ("--json",)):
        out = adapt("run", "--config", '{"seed": 3}', "--model",
                    f"openai:sim:textcraft@{sim.base_url}", *extra)
        assert out.returncode == 0, out.stderr
        assert "Unclosed" not in out.stderr and "unclosed" not in out.stderr.lower()
    assert sim.log()["counters"]["requests"] > 0


def test_run_with_the_tools_executor_and_a_json_plan_offline() -> None:
    out = adapt(*EXAMPLE, "--executor", "tools", "--planner-output", "json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["result"]["status"] == "succeeded"
    nodes = walk(payload["tree"])
    steps = [s for n in nodes for s in n["steps"]]
    assert steps and all(s["extra"]["tool"]["name"] for s in steps)
    calls = [c for n in nodes for c in n["llm_calls"]]
    executor = [c for c in calls if c["role"] == "executor"]
    assert all(c["tools"] and c["tool_calls"] and c["simulated"] for c in executor)
    plans = [n["plan"] for n in nodes if n["plan"]]
    assert plans and all(p["raw"].startswith("{") for p in plans)


def test_a_bad_setting_names_its_variable_not_a_stack_trace() -> None:
    out = adapt("serve", "--port", "8011", env={"ADAPT_LLM_MAX_CONNECTIONS": "0"})
    assert out.returncode == 2, out.stderr
    assert "invalid setting ADAPT_LLM_MAX_CONNECTIONS='0'" in out.stderr
    assert "greater than or equal to 1" in out.stderr and "Traceback" not in out.stderr
