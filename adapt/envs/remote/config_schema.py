"""A remote environment's ``config_model``, made from the JSON schema its server publishes.

The fields, their types (``integer``, ``number``, ``string``, ``boolean``, ``null``, arrays,
objects, ``enum`` / ``const``, ``anyOf`` / ``oneOf``, local ``$ref`` s), defaults and the usual
constraints (ranges, lengths, patterns) become a pydantic model, so a submission is checked
where it arrives, without a request to the server, and a bad field is named in the 422. What a
schema cannot say (a rule across fields, such as TextCraft's "seed or goal") is checked by the
server when the session starts, and a config it refuses ends the task with the server's
message. The model's own JSON schema is the server's, as published.
"""

from __future__ import annotations

import copy
import keyword
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

_SIMPLE: dict[str, Any] = {"integer": int, "number": float, "string": str, "boolean": bool,
                           "null": type(None), "object": dict[str, Any]}
_CONSTRAINTS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt",
                "exclusiveMaximum": "lt", "minLength": "min_length", "maxLength": "max_length",
                "minItems": "min_length", "maxItems": "max_length", "pattern": "pattern"}
#: ``$ref`` s followed at most this deep (a schema that refers to itself stops there)
_MAX_DEPTH = 8


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return node
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, Mapping) else None
    return target if isinstance(target, Mapping) else {}


def _annotation(node: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Any:
    """The Python type a schema node describes (``Any`` for what this reader does not know)."""
    if depth > _MAX_DEPTH:
        return Any
    node = _resolve(node, root)
    if "const" in node:
        base: Any = Literal[node["const"]]
    elif isinstance(node.get("enum"), list) and node["enum"]:
        base = Literal[tuple(node["enum"])]
    elif isinstance(node.get("anyOf") or node.get("oneOf"), list):
        branches = [_annotation(b, root, depth + 1) for b in node.get("anyOf") or node["oneOf"]
                    if isinstance(b, Mapping)]
        base = Union[tuple(branches)] if branches else Any  # noqa: UP007 (built at run time)
    else:
        kind = node.get("type")
        if isinstance(kind, list):
            base = Union[tuple(_SIMPLE.get(k, Any) for k in kind)]  # noqa: UP007
        elif kind == "array":
            items = node.get("items")
            inner = _annotation(items, root, depth + 1) if isinstance(items, Mapping) else Any
            base = list[inner]  # type: ignore[valid-type]
        else:
            base = _SIMPLE.get(str(kind), Any)
    constraints = {name: node[key] for key, name in _CONSTRAINTS.items() if key in node}
    return Annotated[base, Field(**constraints)] if constraints and base is not Any else base


def config_model(env_name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model of the configs ``schema`` (an object schema) accepts."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = {str(r) for r in schema.get("required") or [] if isinstance(r, str)}
    fields: dict[str, Any] = {}
    untyped = False  # a property whose name is no Python name: left to the server
    for name, raw in properties.items():
        if (not name.isidentifier() or keyword.iskeyword(name) or name.startswith(("_", "model_"))
                or hasattr(BaseModel, name)):
            untyped = True
            continue
        node = raw if isinstance(raw, Mapping) else {}
        annotation = _annotation(node, schema)
        info: dict[str, Any] = {"description": node.get("description")}
        if isinstance(node.get("examples"), list):
            info["examples"] = node["examples"]
        if "default" in node:
            default: Any = copy.deepcopy(node["default"])
        elif name in required:
            default = ...
        else:
            default, annotation = None, annotation | None
        fields[name] = (annotation, Field(default, **{k: v for k, v in info.items()
                                                     if v is not None}))
    extra: Literal["forbid", "allow"] = (
        "forbid" if schema.get("additionalProperties") is False and not untyped else "allow")
    title = "".join(p.title() for p in env_name.replace("-", "_").split("_") if p)
    base = type(f"Remote{title}ConfigBase", (PublishedSchema,), {
        "model_config": ConfigDict(extra=extra, frozen=True),
        "published": copy.deepcopy(dict(schema)), "__module__": __name__})
    model: type[BaseModel] = create_model(f"Remote{title}Config", __base__=base,
                                          __module__=__name__, **fields)
    return model


class PublishedSchema(BaseModel):
    """A config model whose JSON schema is the one its server published."""

    published: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.published)


__all__ = ["config_model"]
