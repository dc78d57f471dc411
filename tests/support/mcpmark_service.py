"""The MCPMark registrations (server, workspace templates, checks) as an operator would write
them, for tests that run the 6 runnable tasks through the service."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.mcp_servers import filesystem_spec, require_mcpmark

RUNNABLE = ("budget_computation", "contact_information", "file_arrangement", "code_locating",
            "output_analysis", "requirements_completion")


def runnable_tasks() -> list[dict[str, Any]]:
    manifest = json.loads((require_mcpmark() / "manifest.json").read_text())
    return [t for t in manifest["tasks"] if t["initial_state"]]


def registrations(*, log: Path | None = None,
                  slow: dict[str, float] | None = None) -> dict[str, str]:
    """``ADAPT_MCP_*`` variables: the filesystem server, one workspace per initial state and
    one check per task (its verify.py, run as MCPMark runs it)."""
    data = require_mcpmark()
    tasks = runnable_tasks()
    workspaces = {t["category_id"]: str(data / t["initial_state"]) for t in tasks}
    checks = {t["task_id"]: {"command": [sys.executable, str(data / t["path"] / "verify.py")],
                             "env": {"FILESYSTEM_TEST_DIR": "{workspace}"}} for t in tasks}
    return {"ADAPT_MCP_SERVERS": json.dumps({"filesystem": filesystem_spec(log=log, slow=slow)}),
            "ADAPT_MCP_WORKSPACES": json.dumps(workspaces),
            "ADAPT_MCP_CHECKS": json.dumps(checks)}


#: a model the submission's checks let play MCP (the simulator plays TextCraft only); the tests
#: replace what the service loads with their scripted policy
SCRIPTED = 'script:["x"]'


def submission(task: dict[str, Any], *, model: str = SCRIPTED) -> dict[str, Any]:
    description = (require_mcpmark() / task["path"] / "description.md").read_text()
    return {"environment": "mcp", "strategy": "react", "executor": {"model": model},
            "environment_config": {"server": "filesystem", "workspace": task["category_id"],
                                   "check": task["task_id"], "task": description}}
