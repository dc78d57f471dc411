"""The conformance kit's ``tools`` check (``adapt.envs.testing.check_environment``): an
environment that declares its actions as tools declares them well, and every call stands for
a text action the environment takes.

For each config, after ``reset``: every declaration is a :class:`~adapt.envs.tools.ToolSpec`
with a name chat APIs accept (unique, not one of the tools executor's own), a description and
a valid JSON schema of an object; each tool called with arguments that fit its schema (its
``examples``, else the smallest that fit) gives the same non-empty text action twice, and that
action, stepped on this instance and on a fresh one, gives a well-typed and equal result; a
call of an unknown tool, or with arguments its schema refuses, raises ``ToolCallError`` (what
the model is shown), never another exception. An environment that declares no tools passes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from adapt.envs.tools import (
    RESERVED_NAMES,
    TOOL_NAME,
    ToolCallError,
    ToolSpec,
    check_schema,
    declared_tools,
    sample_arguments,
    validate_arguments,
)

if TYPE_CHECKING:
    from adapt.envs.testing import _Kit

NAME = "tools"
#: a tool no environment declares
UNKNOWN_TOOL = "no_such_tool_for_conformance"


def _short(value: object, limit: int = 100) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _check_declarations(kit: _Kit, declared: list[Any]) -> None:
    seen: set[str] = set()
    for spec in declared:
        if not isinstance(spec, ToolSpec):
            raise kit.fail(NAME, f"tools() gave {_short(spec)}, not a ToolSpec")
        if not isinstance(spec.name, str) or not TOOL_NAME.match(spec.name):
            raise kit.fail(NAME, f"tool name {spec.name!r} must match {TOOL_NAME.pattern} "
                           "(what chat APIs accept)")
        if spec.name in seen:
            raise kit.fail(NAME, f"tool {spec.name!r} is declared twice")
        if spec.name in RESERVED_NAMES:
            raise kit.fail(NAME, f"tool {spec.name!r} is the tools executor's own "
                           f"({', '.join(sorted(RESERVED_NAMES))}); give it another name")
        seen.add(spec.name)
        if not isinstance(spec.description, str) or not spec.description.strip():
            raise kit.fail(NAME, f"tool {spec.name!r} needs a description (the model reads it)")
        try:
            check_schema(spec.parameters)
            json.dumps(spec.function_schema())
        except (ValueError, TypeError) as exc:
            raise kit.fail(NAME, f"tool {spec.name!r}: {exc}") from exc


def _refused(kit: _Kit, env: Any, name: str, arguments: Mapping[str, Any], what: str) -> None:
    """``tool_action(name, arguments)`` must raise ``ToolCallError``."""
    try:
        value = env.tool_action(name, arguments)
    except ToolCallError:
        return
    except Exception as exc:
        raise kit.fail(NAME, f"tool_action for {what} raised {type(exc).__name__}: {exc}; "
                       "raise ToolCallError (its message is shown to the model)") from exc
    raise kit.fail(NAME, f"tool_action for {what} must raise ToolCallError, returned "
                   f"{_short(value)}")


def _same_on_a_fresh_instance(kit: _Kit, config: Mapping[str, Any], doing: str, action: str,
                              result: Any) -> None:
    twin = kit.new(NAME)
    kit.reset(NAME, twin, config)
    other = kit.step(NAME, twin, action)
    outcome = (result.observation, float(result.reward), result.done)
    if (other.observation, float(other.reward), other.done) != outcome:
        raise kit.fail(NAME, f"the action of {doing}, {action!r}, gave {_short(outcome)} "
                       "on one instance and something else on a fresh one")


def check_tools(kit: _Kit, env: Any, config: Mapping[str, Any],
                check_result: Callable[[str, Any], None],
                varying: frozenset[str] = frozenset()) -> list[str]:
    """Run the ``tools`` check on ``env`` for ``config``; the names of the tools checked
    (``[]``: the environment declares none). ``check_result(action, result)``: the kit's
    check of a step's result. The tools in ``varying`` may answer differently on a fresh
    instance (not compared)."""
    kit.reset(NAME, env, config)
    with kit.check(NAME, "tools()"):
        found = declared_tools(env)
    if found is None:
        return []
    declared: list[Any] = list(found)
    _check_declarations(kit, declared)
    for spec in declared:
        arguments = sample_arguments(spec.parameters)
        try:
            validate_arguments(spec, arguments)
        except ToolCallError as exc:
            raise kit.fail(NAME, f"tool {spec.name!r}: the arguments it is checked with "
                           f"({_short(arguments)}) do not fit its schema ({exc}); give the "
                           "schema an 'examples' entry that does") from exc
        kit.reset(NAME, env, config)
        doing = f"tool_action({spec.name!r}, {_short(arguments, 60)})"
        with kit.check(NAME, doing):
            action = env.tool_action(spec.name, arguments)
            again = env.tool_action(spec.name, arguments)
        if not isinstance(action, str) or not action.strip():
            raise kit.fail(NAME, f"{doing} returned {_short(action)}, not a non-empty str")
        if again != action:
            raise kit.fail(NAME, f"{doing} gave {action!r}, then {again!r}")
        result = kit.step(NAME, env, action)
        check_result(action, result)
        if spec.name not in varying:
            _same_on_a_fresh_instance(kit, config, doing, action, result)
        if spec.parameters.get("required"):
            _refused(kit, env, spec.name, {}, f"{spec.name} without its required arguments")
    _refused(kit, env, UNKNOWN_TOOL, {}, "an unknown tool")
    return [spec.name for spec in declared]
