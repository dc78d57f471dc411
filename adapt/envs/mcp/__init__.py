"""MCP servers as environments (``environment: "mcp"``): a task done with the tools of a server
the operator registered, on a fresh workspace copy per episode, scored by a registered check.

The official ``mcp`` package is an optional extra (``pip install -e ".[mcp]"``); without it the
environment is listed but an episode cannot start (the error says how to install it).
See docs/mcp.md.
"""

from adapt.envs.mcp.config import MCPConfig
from adapt.envs.mcp.env import MCPEnvironment
from adapt.envs.mcp.settings import (
    CheckSpec,
    MCPSettings,
    ServerSpec,
    current_settings,
    mcp_policy,
    use_settings,
)

__all__ = ["CheckSpec", "MCPConfig", "MCPEnvironment", "MCPSettings", "ServerSpec",
           "current_settings", "mcp_policy", "use_settings"]
