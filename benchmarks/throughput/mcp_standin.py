"""The throughput bench's ``mcp`` workload: a scripted stand-in for a model, and the
registrations (server, workspace template, check) its tasks run with.

No simulated model plays an MCP environment (``sim:textcraft`` reads TextCraft's prompts
only), so the bench's MCP tasks are answered by :class:`MCPStandIn`, a *scripted* policy, not a
model: served by the simulator's HTTP server (registered there as ``sim:mcp-standin`` by
:func:`register`, in the server's own process), with the same injected latency per call. It
reads the tools conversation (the ``tools`` executor's chat request) and answers with the next
call of a fixed plan against the npm filesystem MCP server:

1. ``list_allowed_directories`` (the workspace copy's path is read from the answer);
2. ``list_directory`` of the workspace;
3. ``read_text_file`` of every file at its top level (``[FILE]`` lines), one per call;
4. ``write_file`` of ``line_counts.txt``: each file's name and line count, as read;
5. ``task_completed``.

A tool result that is an error, or a conversation that does not offer the filesystem tools,
is answered with ``task_failed``. On MCPMark's ``desktop_template`` initial state (8 files at
the top level) a task makes 12 LLM calls, each but the last a real call to the server, and
the registered check (:data:`CHECK_SCRIPT`, run on the workspace after the episode) confirms
the counts against the files, so a task succeeds only if every call went through.

Each task starts its own server process (``node``) and, at the end, a check process (Python):
the bench prints their CPU (children of the worker process) on a line of its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from adapt.llm.base import ChatRequest, ChatResponse, Message, ToolCall, Usage

NAME = "mcp-standin"
SPEC = f"sim:{NAME}"
#: what the bench names the server, the workspace template and the check
SERVER, WORKSPACE, CHECK = "bench-files", "desktop", "line-counts"
OUTPUT = "line_counts.txt"
TASK = (f"Count the lines of every file at the top level of the workspace and write each "
        f"file's name and its line count, separated by a tab, one file per line, to {OUTPUT}.")
FILESYSTEM_VERSION = "2026.8.31"
NODE_PREFIX = Path.home() / ".cache" / "adapt-ci" / "node"
_PACKAGE = Path("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
_ROOT = Path(__file__).resolve().parents[2]
#: MCPMark's Filesystem data (``/work/shared`` beside the repository, or ADAPT_TEST_SHARED)
MCPMARK = Path(os.environ.get("ADAPT_TEST_SHARED") or _ROOT.parent / "shared") \
    / "data" / "mcpmark-filesystem"
TEMPLATE = MCPMARK / "initial_states" / "desktop_template"
INSTALL = (f"npm install --prefix {NODE_PREFIX} @modelcontextprotocol/server-filesystem@"
           f"{FILESYSTEM_VERSION} (.ci/run does)")
_ALLOWED = re.compile(r"Allowed directories:\n(\S+)")
_FILE = re.compile(r"^\[FILE\] (.+?)\s*$", re.MULTILINE)
_NEEDED = ("list_allowed_directories", "list_directory", "read_text_file", "write_file")

#: the check: exit status 0 when line_counts.txt holds every top-level file's line count
CHECK_SCRIPT = f"""
import os, pathlib, sys
ws = pathlib.Path(os.environ["WORKSPACE"])
files = sorted(p for p in ws.iterdir() if p.is_file() and p.name != {OUTPUT!r})
want = "".join(f"{{p.name}}\\t{{len(p.read_text(errors='replace').splitlines())}}\\n"
               for p in files)
out = ws / {OUTPUT!r}
got = out.read_text() if out.is_file() else None
print("PASS" if got == want else f"FAIL: expected {{want!r}}, found {{got!r}}")
sys.exit(0 if got == want else 1)
"""


def filesystem_server() -> Path | None:
    """The npm filesystem server's ``dist/index.js`` (``ADAPT_TEST_MCP_FILESYSTEM``, or where
    ``.ci/run`` installs it), if installed."""
    given = os.environ.get("ADAPT_TEST_MCP_FILESYSTEM")
    path = Path(given) if given else NODE_PREFIX / _PACKAGE
    return path if path.is_file() else None


def missing() -> list[str]:
    """What the mcp workload needs and this machine lacks (empty: all there)."""
    lacks = []
    try:
        import mcp  # noqa: F401
    except ImportError:
        lacks.append('the mcp package (pip install -e ".[mcp]")')
    if shutil.which("node") is None:
        lacks.append("node (Node.js) on PATH")
    if filesystem_server() is None:
        lacks.append(f"the MCP filesystem server: {INSTALL}")
    if not TEMPLATE.is_dir():
        lacks.append(f"MCPMark's desktop_template initial state at {TEMPLATE} "
                     "(set ADAPT_TEST_SHARED to the folder holding data/mcpmark-filesystem)")
    return lacks


def registrations(work_dir: Path) -> dict[str, str]:
    """The ``ADAPT_MCP_*`` variables the worker runs the workload's tasks with: the filesystem
    server on each episode's copy of ``desktop_template``, the check, episodes in
    ``work_dir``. Raises ``RuntimeError`` naming what is missing."""
    lacks = missing()
    if lacks:
        raise RuntimeError("the mcp workload cannot run: missing " + "; ".join(lacks))
    node, server = shutil.which("node"), filesystem_server()
    return {
        "ADAPT_MCP_SERVERS": json.dumps(
            {SERVER: {"command": node, "args": [str(server), "{workspace}"]}}),
        "ADAPT_MCP_WORKSPACES": json.dumps({WORKSPACE: str(TEMPLATE)}),
        "ADAPT_MCP_CHECKS": json.dumps({CHECK: {
            "command": [sys.executable, "-I", "-c", CHECK_SCRIPT],
            "env": {"WORKSPACE": "{workspace}"}, "timeout_seconds": 60}}),
        "ADAPT_MCP_WORK_DIR": str(work_dir),
    }


def task_config() -> dict[str, Any]:
    return {"server": SERVER, "workspace": WORKSPACE, "check": CHECK, "task": TASK}


# -- the stand-in ----------------------------------------------------------------------------
def next_call(messages: list[Message], offered: set[str]) -> tuple[str, dict[str, Any]]:
    """The plan's next call (name, arguments) after the tool results in ``messages``."""
    if not set(_NEEDED) <= offered:
        return "task_failed", {"reason": "the stand-in drives the filesystem server's tools "
                                         "only; they are not offered"}
    results = [m.content for m in messages if m.role == "tool"]
    failed = next((r for r in results if r.startswith(("Error", "Invalid action"))), None)
    if failed is not None:
        return "task_failed", {"reason": failed[:200]}
    if not results:
        return "list_allowed_directories", {}
    found = _ALLOWED.search(results[0])
    if found is None:
        return "task_failed", {"reason": "no allowed directory in the answer"}
    ws = found.group(1).rstrip("/")
    if len(results) == 1:
        return "list_directory", {"path": ws}
    files = [f for f in _FILE.findall(results[1]) if f != OUTPUT]
    read = results[2:]
    if len(read) < len(files):
        return "read_text_file", {"path": f"{ws}/{files[len(read)]}"}
    if len(read) == len(files):
        counts = "".join(f"{f}\t{len(text.splitlines())}\n"
                         for f, text in zip(files, read, strict=True))
        return "write_file", {"path": f"{ws}/{OUTPUT}", "content": counts}
    return "task_completed", {"summary": f"Wrote the line counts of {len(files)} files."}


class MCPStandIn:
    """A scripted tool-calling stand-in (not a model) for the bench's MCP tasks: see the
    module's docstring. Labelled simulated; token usage estimated at 4 characters a token."""

    name = SPEC
    simulated = True

    async def complete(self, request: ChatRequest) -> ChatResponse:
        messages = request.as_messages()
        prompt_chars = sum(len(m.content) for m in messages) + len(json.dumps(request.tools or []))
        if not request.tools:  # a request that offers no tools (e.g. a planner's): no plan
            text = "think: The stand-in answers tools requests only. Task failed!"
            return ChatResponse(text=text, model=self.name, simulated=True,
                                finish_reason="stop", usage=_usage(prompt_chars, len(text)))
        offered = {str(t.get("function", t).get("name")) for t in request.tools}
        name, arguments = next_call(messages, offered)
        done = sum(len(m.tool_calls or ()) for m in messages if m.role == "assistant")
        call = ToolCall(id=f"call_{done}", name=name, arguments=json.dumps(arguments))
        return ChatResponse(text="", model=self.name, simulated=True, finish_reason="tool_calls",
                            tool_calls=[call], usage=_usage(prompt_chars, len(call.arguments)))


def _usage(prompt_chars: int, completion_chars: int) -> Usage:
    return Usage(prompt_tokens=-(-prompt_chars // 4), completion_tokens=-(-completion_chars // 4),
                 estimated=True)


def register() -> None:
    """Register the stand-in with the simulator registry of this process (the simulator's
    server, started by the bench), as ``sim:mcp-standin``."""
    from adapt.sim.registry import Simulator, register_simulator

    register_simulator(Simulator(
        name=NAME, description="the throughput bench's scripted MCP stand-in (not a model)",
        knobs=(), factory=lambda knobs: MCPStandIn(), environments=("mcp",)))
