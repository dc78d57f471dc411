"""Planning: the planner call, the plan format and the AND/OR logic of its execution order."""

from adapt.engine.planning.parse import parse_plan
from adapt.engine.planning.planner import Planner

__all__ = ["Planner", "parse_plan"]
