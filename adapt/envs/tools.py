"""Actions declared as tools: a name, a description and a JSON schema of the arguments.

An environment that declares its actions as tools has the :class:`DeclaresTools` members. The
declaration is made once and rendered twice: the text executors keep the environment's own
action grammar and prompts (a paper prompt is never changed by it), the ``tools`` executor sends
the declarations as function schemas and turns each call the model makes back into the
environment's text action with ``tool_action``, so every action still goes through
``step(action)`` and is recorded, replayed and verified like any other. An environment that
declares no tools keeps working with every text executor.

The hints (``read_only``, ``destructive``, ``idempotent``) are MCP's tool annotations: what a
call does to the world. Resuming a task after a crash reads them (a call in flight at the crash
is sent again only when it is read-only or idempotent), and an approval rule may name
``"destructive"`` tools.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

#: what chat APIs accept as a function name
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: the tools executor's own tools (its self-assessment): no environment may declare them
RESERVED_NAMES = frozenset({"task_completed", "task_failed"})


def _no_arguments() -> Mapping[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One action as a tool."""

    #: the function name the model calls (``^[A-Za-z0-9_-]{1,64}$``, as chat APIs require)
    name: str
    description: str
    #: JSON schema of the arguments (an object schema)
    parameters: Mapping[str, Any] = field(default_factory=_no_arguments)
    #: the call changes nothing in the world
    read_only: bool = False
    #: the call may destroy data (delete, overwrite)
    destructive: bool = False
    #: calling it again with the same arguments changes nothing more
    idempotent: bool = False

    def function_schema(self) -> dict[str, Any]:
        """The declaration as an OpenAI chat ``tools`` entry."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": dict(self.parameters)}}


class ToolCallError(ValueError):
    """A call the environment cannot turn into an action (unknown tool, bad arguments). Its
    message is shown to the model as the call's result, as a bad text action's observation
    is; the episode goes on."""


@runtime_checkable
class DeclaresTools(Protocol):
    """An environment whose actions are also tools."""

    def tools(self) -> Sequence[ToolSpec]:
        """The tools of the current episode (after ``reset``; they may depend on the task)."""
        ...

    def tool_action(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The text action a call of tool ``name`` with ``arguments`` stands for (what
        ``step`` takes); raises :class:`ToolCallError` for a call it cannot take."""
        ...


def declared_tools(env: object) -> list[ToolSpec] | None:
    """``env``'s tools, or None when it declares none."""
    if not isinstance(env, DeclaresTools):
        return None
    return list(env.tools())


# -- arguments --------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    from jsonschema import Draft202012Validator  # loaded by the first call that checks

    return Draft202012Validator(json.loads(schema_json))


def check_schema(parameters: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless ``parameters`` is a valid JSON schema of an object."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if parameters.get("type") != "object":
        raise ValueError('the parameters must be an object schema ({"type": "object", ...})')
    try:
        Draft202012Validator.check_schema(dict(parameters))
    except SchemaError as exc:
        raise ValueError(f"the parameters are not a valid JSON schema: {exc.message}") from None


def parse_arguments(text: str) -> dict[str, Any]:
    """A call's arguments (JSON text, as the model wrote them) as an object; an empty text is
    ``{}``. Raises :class:`ToolCallError` saying what is wrong."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolCallError(f"the arguments are not valid JSON ({exc.msg} at character "
                            f"{exc.pos}); write them as a JSON object") from None
    if not isinstance(value, dict):
        raise ToolCallError("the arguments must be a JSON object, e.g. {\"name\": value}")
    return value


def validate_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """Raise :class:`ToolCallError` naming the argument that does not fit ``spec``'s schema
    (every problem, in a stable order)."""
    validator = _validator(json.dumps(dict(spec.parameters), sort_keys=True))
    errors = sorted(validator.iter_errors(dict(arguments)),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        problems = "; ".join(
            (".".join(str(p) for p in e.absolute_path) or "arguments") + ": " + e.message
            for e in errors[:5])
        raise ToolCallError(f"bad arguments for {spec.name}: {problems}")


def argument_errors(schema: Mapping[str, Any], arguments: Any) -> list[tuple[str, str]]:
    """Where ``arguments`` does not fit ``schema``: ``(path, message)`` pairs in a stable
    order, the path dotted (``"path"``, ``"edits.0.newText"``; ``""``: the arguments as a
    whole). A missing required property and one the schema does not allow are named by
    their own path."""
    validator = _validator(json.dumps(dict(schema), sort_keys=True))
    found: list[tuple[str, str]] = []
    for error in validator.iter_errors(arguments):
        path = [str(p) for p in error.absolute_path]
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [r for r in error.validator_value if r not in error.instance]
            path += missing[:1]
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties") or {})
            extra = sorted(k for k in error.instance if k not in allowed)
            path += extra[:1]
        found.append((".".join(path), error.message))
    return sorted(found)


def sample_arguments(schema: Mapping[str, Any]) -> Any:
    """Arguments that fit ``schema``: its first ``examples`` entry, else the smallest value of
    each required property (a string ``"x"``, the minimum number, an enum's first value, ...);
    what the conformance kit calls a tool with."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: sample_arguments(props.get(k, {})) for k in schema.get("required", ())}
    if kind == "array":
        return [sample_arguments(schema.get("items") or {})
                for _ in range(int(schema.get("minItems", 0)))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "x" * max(1, int(schema.get("minLength", 1)))


# -- a table of tools, each standing for one text action ----------------------------------------
ActionOf = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True, slots=True)
class ActionTool:
    """One tool and the text action a call of it stands for: a ``str.format`` template over the
    arguments (``"get {count} {item}"``) or a function of them; called with arguments already
    checked against the schema."""

    spec: ToolSpec
    action: str | ActionOf

    def render(self, arguments: Mapping[str, Any]) -> str:
        if callable(self.action):
            return self.action(arguments)
        return self.action.format(**arguments)


def text_action(table: Sequence[ActionTool], name: str, arguments: Mapping[str, Any]) -> str:
    """The text action of a call of ``name`` in ``table``, its arguments checked first."""
    for tool in table:
        if tool.spec.name == name:
            validate_arguments(tool.spec, arguments)
            return tool.render(arguments)
    known = ", ".join(t.spec.name for t in table)
    raise ToolCallError(f"there is no tool {name!r}; the tools are: {known}")


class ToolActions:
    """Mixin of an environment whose actions are a fixed table of tools (``action_tools``):
    it declares them (:class:`DeclaresTools`) and turns each call into its text action."""

    action_tools: ClassVar[Sequence[ActionTool]] = ()

    def tools(self) -> Sequence[ToolSpec]:
        return [t.spec for t in self.action_tools]

    def tool_action(self, name: str, arguments: Mapping[str, Any]) -> str:
        return text_action(self.action_tools, name, arguments)


#: a string argument on one line (the text environments read one action per line)
ONE_LINE: dict[str, Any] = {"type": "string", "minLength": 1, "pattern": "^[^\\r\\n]+$"}


def one_line(description: str) -> dict[str, Any]:
    return {**ONE_LINE, "description": description}


def count(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "description": description}


def arguments(required: Mapping[str, Mapping[str, Any]], *,
              examples: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """An object schema whose properties are all required and nothing else is allowed."""
    schema: dict[str, Any] = {"type": "object", "properties": {k: dict(v) for k, v in
                                                               required.items()},
                              "required": list(required), "additionalProperties": False}
    if examples:
        schema["examples"] = [dict(e) for e in examples]
    return schema
