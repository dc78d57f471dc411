"""The ``environment_config`` of the mcp environment: registered names and the task's text.

No field holds a command, a path or a URL: ``server``, ``workspace`` and ``check`` name what the
operator registered (``ADAPT_MCP_SERVERS``, ``ADAPT_MCP_WORKSPACES``, ``ADAPT_MCP_CHECKS``), and
a name that is not registered is refused naming the field (the API answers 422).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from adapt.envs.mcp.settings import NAME_PATTERN, MCPSettings, current_settings, mcp_policy
from adapt.errors import OutboundRefused


def _registered(kind: str, name: str | None, table: dict[str, object], setting: str) -> None:
    if name is not None and name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise ValueError(f"{kind} {name!r} is not registered on this server (registered: "
                         f"{known}; the operator registers them in {setting})")


class MCPConfig(BaseModel):
    """One task on an MCP server: which registered server, workspace and check, and the task."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={"examples": [
            {"server": "files", "workspace": "desktop", "check": "budget",
             "task": "Write the total of the expenses to total_budget.txt."},
        ]},
    )

    server: str = Field(pattern=NAME_PATTERN, description="A registered MCP server "
                        "(ADAPT_MCP_SERVERS).", examples=["files"])
    task: str = Field(min_length=1, max_length=20_000,
                      description="What the agent should do: the episode's goal.")
    workspace: str | None = Field(
        default=None, pattern=NAME_PATTERN, description="A registered workspace template "
        "(ADAPT_MCP_WORKSPACES): the episode's server works on a fresh copy of it.")
    check: str | None = Field(
        default=None, pattern=NAME_PATTERN, description="A registered check (ADAPT_MCP_CHECKS) "
        "run on the workspace after the episode: it decides the task's success.")
    #: the registrations names are checked against (None: those in force, ``current_settings``)
    registrations: ClassVar[MCPSettings | None] = None

    @classmethod
    def _in_force(cls) -> MCPSettings:
        return cls.registrations or current_settings()

    @classmethod
    def bound(cls, settings: MCPSettings) -> type[MCPConfig]:
        """This model checking names against ``settings`` (an environment made with its own
        registrations: a bench, a test)."""
        return type("MCPConfig", (cls,), {"registrations": settings,
                                          "__module__": cls.__module__})

    prompts: Literal["default", "mcpmark"] = Field(
        default="default", description="Executor prompt: 'default' (the project's) or "
        "'mcpmark' (MCPMark's agent instructions).")

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        settings = cls._in_force()
        _registered("server", value, dict(settings.servers), "ADAPT_MCP_SERVERS")
        url = settings.servers[value].url
        if url is not None:  # the policy when a task names it; again before each connection
            try:
                mcp_policy(settings.allowed_networks).check_url(url)
            except OutboundRefused as exc:
                raise ValueError(f"server {value!r}: {exc}") from None
        return value

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: str | None) -> str | None:
        _registered("workspace", value, dict(cls._in_force().workspaces), "ADAPT_MCP_WORKSPACES")
        return value

    @field_validator("check")
    @classmethod
    def _check(cls, value: str | None) -> str | None:
        _registered("check", value, dict(cls._in_force().checks), "ADAPT_MCP_CHECKS")
        return value

    @model_validator(mode="after")
    def _fits(self) -> MCPConfig:
        spec = type(self)._in_force().servers.get(self.server)
        if spec is None:
            return self
        if spec.uses_workspace and self.workspace is None:
            raise ValueError(f"workspace: server {self.server!r} works on a workspace; name a "
                             "registered workspace template")
        if self.workspace is not None and not spec.uses_workspace:
            raise ValueError(f"workspace: server {self.server!r} takes no workspace")
        if self.check is not None and self.workspace is None:
            raise ValueError("check: a check runs on a workspace; name one in workspace")
        return self
