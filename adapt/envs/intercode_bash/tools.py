"""InterCode-Bash's actions as tools: ``execute`` (one command line) and ``submit``
(``adapt.envs.tools``)."""

from __future__ import annotations

from adapt.envs.tools import ActionTool, ToolSpec, arguments

TOOLS: tuple[ActionTool, ...] = (
    ActionTool(ToolSpec(
        "execute", "Run one bash command line in the task's sandboxed file system and see its "
        "output and exit status.",
        arguments({"command": {"type": "string", "minLength": 1,
                               "description": "The command line, e.g. ls -l /testbed."}},
                  examples=[{"command": "pwd"}]),
        destructive=True),
        "execute[{command}]"),
    ActionTool(ToolSpec(
        "submit", "End the task: what the commands changed and the last output are scored.",
        arguments({}), idempotent=True),
        "submit"),
)
