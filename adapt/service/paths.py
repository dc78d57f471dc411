"""Environment config fields that name a file or folder on the server (``server_path`` in their
JSON schema, e.g. ALFWorld's ``game_path`` and ``data_dir``): through the API they may only
point inside the operator's ``ADAPT_PATH_ROOTS``. The stored config holds the resolved path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from adapt.errors import PathNotAllowed as PathNotAllowed

#: put in a config field's ``json_schema_extra`` to mark it as naming a server path
SERVER_PATH: dict[str, Any] = {"server_path": True}


def server_path_fields(model: type[BaseModel]) -> list[str]:
    return [name for name, info in model.model_fields.items()
            if isinstance(info.json_schema_extra, dict)
            and info.json_schema_extra.get("server_path")]


def _inside(value: str, roots: Sequence[Path]) -> Path | None:
    for root in roots:
        base = root.resolve()
        target = (base / value).resolve()
        if target.is_relative_to(base):
            return target
    return None


def check_server_paths(config: BaseModel, roots: Sequence[Path]) -> dict[str, str]:
    """The resolved path of every server-path field set in ``config``; raises
    :class:`PathNotAllowed` for one outside every root (or for any, with no roots)."""
    resolved: dict[str, str] = {}
    for name in server_path_fields(type(config)):
        value = getattr(config, name)
        if value is None:
            continue
        target = _inside(str(value), roots)
        if target is None:
            allowed = ", ".join(str(r) for r in roots)
            raise PathNotAllowed(name, (
                f"{str(value)!r} is not inside a folder this server lets users name "
                f"({allowed})" if roots else
                f"this server lets no user name a server path ({str(value)!r}); the operator "
                "may allow folders with ADAPT_PATH_ROOTS"))
        resolved[name] = str(target)
    return resolved


@runtime_checkable
class NamesServerPaths(Protocol):
    """An environment whose config names server folders indirectly (a registered name that
    stands for a folder, e.g. an MCP workspace template): ``server_paths(config)`` says which
    field names which folder, so that the edge holds them to ``ADAPT_PATH_ROOTS`` too."""

    def server_paths(self, config: Any) -> Mapping[str, str]: ...


def check_named_paths(env_class: type, config: BaseModel, roots: Sequence[Path]) -> None:
    """Raise :class:`PathNotAllowed` for a folder ``config`` names (through the environment's
    ``server_paths``) that is outside every root."""
    if not callable(getattr(env_class, "server_paths", None)):
        return
    env = env_class()
    try:
        if not isinstance(env, NamesServerPaths):
            return
        named = env.server_paths(config)
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
    for field, folder in named.items():
        if _inside(folder, roots) is None:
            raise PathNotAllowed(field, (
                f"its folder is not inside a folder this server lets tasks use "
                f"({', '.join(str(r) for r in roots) or 'none: set ADAPT_PATH_ROOTS'}); the "
                "operator must register templates inside ADAPT_PATH_ROOTS"))
