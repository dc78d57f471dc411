"""The mcp environment's own settings (``ADAPT_MCP_*``): the MCP servers, workspace templates
and checks the operator registers, and the limits of one episode's server.

A user's ``environment_config`` only ever names what is registered here: a server, a workspace
template, a check. Commands, paths and URLs are the operator's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from adapt.net.policy import OutboundPolicy

#: what a registered name may look like (a server, a workspace template, a check)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
#: the placeholder a server's arguments (or a check's) use for the episode's workspace copy
WORKSPACE = "{workspace}"
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_variables(env: dict[str, str]) -> dict[str, str]:
    for name in env:
        if not _VARIABLE.match(name):
            raise ValueError(f"not an environment variable name: {name!r}")
    return env


class ServerSpec(BaseModel):
    """One MCP server: a command started per episode (stdio), or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(
        default=None, min_length=1, description="stdio: the program started for each episode "
        "(found on the system PATH, or an absolute path).")
    args: list[str] = Field(
        default_factory=list, description="stdio: its arguments; `{workspace}` stands for the "
        "episode's copy of its workspace template.")
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: variables added to the minimal environment "
        "the server starts with (it never sees the worker's own).")
    url: str | None = Field(
        default=None, description="streamable HTTP: the server's endpoint URL (checked against "
        "ADAPT_MCP_ALLOWED_NETWORKS when a task names it and before each connection).")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="streamable HTTP: headers sent with every request "
        "(e.g. Authorization).")

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (streamable HTTP)")
        if self.url is not None and (self.args or self.env):
            raise ValueError("args and env are for a command (stdio), not a url")
        if self.command is not None and self.headers:
            raise ValueError("headers are for a url (streamable HTTP), not a command")
        _check_variables(self.env)
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "streamable-http"

    @property
    def uses_workspace(self) -> bool:
        return any(WORKSPACE in a for a in self.args) or any(
            WORKSPACE in v for v in self.env.values())


class CheckSpec(BaseModel):
    """A command run on the workspace after the episode: exit status 0 = the task succeeded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] = Field(
        min_length=1, description="The program and its arguments (`{workspace}`: the episode's "
        "workspace copy), e.g. [\"python3\", \"/srv/checks/verify.py\"].")
    env: dict[str, str] = Field(
        default_factory=dict, description="Variables added to its minimal environment "
        "(`{workspace}` allowed), e.g. {\"FILESYSTEM_TEST_DIR\": \"{workspace}\"}.")
    timeout_seconds: float = Field(default=300.0, gt=0, le=3600,
                                   description="Longest the check may run (then it fails).")

    @model_validator(mode="after")
    def _names(self) -> CheckSpec:
        _check_variables(self.env)
        return self


class MCPSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADAPT_MCP_", env_file=".env", extra="ignore")

    servers: dict[Name, ServerSpec] = Field(
        default_factory=dict, description="The MCP servers tasks may use, by name (JSON object): "
        '{"files": {"command": "mcp-server-filesystem", "args": ["{workspace}"]}} starts a '
        "process per episode (stdio); {\"url\": \"https://...\", \"headers\": {...}} connects "
        "over streamable HTTP. A task names one with environment_config.server.")
    workspaces: dict[Name, Path] = Field(
        default_factory=dict, description="Workspace templates by name (JSON object): folders "
        "inside ADAPT_PATH_ROOTS; each episode gets a fresh copy, removed after scoring.")
    checks: dict[Name, CheckSpec] = Field(
        default_factory=dict, description="Checks by name (JSON object): a command run on the "
        "episode's workspace after the episode, exit status 0 = success (how MCPMark runs "
        "verify.py).")
    allowed_networks: list[str] = Field(
        default_factory=list, description="Networks (CIDRs) or host names a server URL may "
        "reach although they are not public addresses (JSON list, e.g. [\"10.0.0.0/8\"]).")
    work_dir: Path | None = Field(
        default=None, description="Where episode folders (workspace copies, the servers' "
        "working folders) are made (unset: adapt-mcp in the system's temporary folder).")
    call_timeout_seconds: float = Field(
        default=60.0, gt=0, le=3600, description="Longest one tool call may take (then the "
        "model sees that it timed out).")
    start_timeout_seconds: float = Field(
        default=60.0, gt=0, le=600, description="Longest a server may take to start and list "
        "its tools.")
    max_result_chars: int = Field(
        default=20_000, ge=200, le=1_000_000, description="Characters of a tool result kept "
        "and shown to the model (the rest is cut, with a note).")
    max_check_output_chars: int = Field(
        default=2_000, ge=100, le=100_000, description="Characters of a check's output kept as "
        "the task's evidence.")

    def names(self) -> dict[str, Any]:
        """What a task may name, for messages."""
        return {"server": sorted(self.servers), "workspace": sorted(self.workspaces),
                "check": sorted(self.checks)}


def mcp_policy(allowed: Sequence[str]) -> OutboundPolicy:
    """The outbound-address policy for MCP server URLs (``ADAPT_MCP_ALLOWED_NETWORKS``)."""
    return OutboundPolicy(tuple(allowed), subject="MCP server URL", feature="MCP servers",
                          setting="ADAPT_MCP_ALLOWED_NETWORKS", docs="docs/mcp.md")


_current: ContextVar[MCPSettings | None] = ContextVar("adapt_mcp_settings", default=None)


def current_settings() -> MCPSettings:
    """The registrations in force: those :func:`use_settings` set for this context (a bench, a
    test), else the operator's (``ADAPT_MCP_*``, read now)."""
    return _current.get() or MCPSettings()


@contextmanager
def use_settings(settings: MCPSettings) -> Iterator[MCPSettings]:
    """Make ``settings`` the registrations in force inside the ``with`` (and in the asyncio
    tasks started there)."""
    token = _current.set(settings)
    try:
        yield settings
    finally:
        _current.reset(token)
