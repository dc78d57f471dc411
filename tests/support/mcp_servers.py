"""Real MCP servers for tests: where they are, and the registrations that start them.

- ``@modelcontextprotocol/server-filesystem`` (npm, pinned in ``FILESYSTEM_VERSION``): found
  through ``ADAPT_TEST_MCP_FILESYSTEM`` (the package's ``dist/index.js``) or in
  ``~/.cache/adapt-ci/node`` where ``.ci/run`` installs it with the machine's npm; under
  ``CI=true`` a test that needs it fails instead of skipping.
- ``mcp-server-git`` (PyPI, pinned in the ``test`` extra): ``python -m mcp_server_git``.
- the tiny server of ``mcp_test_server.py`` (stdio or streamable HTTP) and the counting proxy
  of ``mcp_proxy.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

FILESYSTEM_VERSION = "2026.8.31"
NODE_PREFIX = Path.home() / ".cache" / "adapt-ci" / "node"
_PACKAGE = Path("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
HERE = Path(__file__).resolve().parent
TEST_SERVER = HERE / "mcp_test_server.py"
PROXY = HERE / "mcp_proxy.py"
#: MCPMark's Filesystem tasks next to the repository (or under ADAPT_TEST_SHARED)
SHARED = Path(os.environ.get("ADAPT_TEST_SHARED") or HERE.parents[1].parent / "shared")
MCPMARK = SHARED / "data" / "mcpmark-filesystem"
INSTALL = (f"npm install --prefix {NODE_PREFIX} @modelcontextprotocol/server-filesystem@"
           f"{FILESYSTEM_VERSION} (.ci/run does)")


def filesystem_server() -> Path | None:
    given = os.environ.get("ADAPT_TEST_MCP_FILESYSTEM")
    path = Path(given) if given else NODE_PREFIX / _PACKAGE
    return path if path.is_file() else None


def missing(reason: str) -> None:
    """Skip with ``reason``; under CI, fail: CI installs what these tests need."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI installs it: this must not be skipped there)")
    pytest.skip(reason)


def require_filesystem_server() -> Path:
    path = filesystem_server()
    if path is None:
        missing(f"the MCP filesystem server is not installed: {INSTALL}")
    assert path is not None
    return path


def require_mcpmark() -> Path:
    if not (MCPMARK / "manifest.json").is_file():
        missing(f"no MCPMark data at {MCPMARK} (set ADAPT_TEST_SHARED)")
    return MCPMARK


def filesystem_spec(*, log: Path | None = None, slow: dict[str, float] | None = None
                    ) -> dict[str, Any]:
    """The registration of the filesystem server on ``{workspace}`` (through the counting
    proxy when ``log`` is given)."""
    server = ["node", str(require_filesystem_server()), "{workspace}"]
    if log is None:
        return {"command": server[0], "args": server[1:]}
    extra = [a for tool, secs in (slow or {}).items() for a in ("--slow", tool, str(secs))]
    return {"command": sys.executable, "args": [str(PROXY), str(log), *extra, "--", *server]}


def git_spec() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository",
                                                "{workspace}"]}


def tiny_server_spec(folder: str = "{workspace}") -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TEST_SERVER), "stdio", folder]}
