"""InterCode-SQL's actions as tools: ``execute`` (one query) and ``submit``
(``adapt.envs.tools``)."""

from __future__ import annotations

from adapt.envs.tools import ActionTool, ToolSpec, arguments

TOOLS: tuple[ActionTool, ...] = (
    ActionTool(ToolSpec(
        "execute", "Run one SQL query on the task's database (read-only) and see its result "
        "rows or its error. The result of the last query is the answer submit scores.",
        arguments({"query": {"type": "string", "minLength": 1,
                             "description": "One SQL statement, e.g. SELECT count(*) FROM "
                             "singer."}},
                  examples=[{"query": "SHOW TABLES"}]),
        idempotent=True),
        "execute[{query}]"),
    ActionTool(ToolSpec(
        "submit", "End the task: the result of the last query is the answer.",
        arguments({}), idempotent=True),
        "submit"),
)
