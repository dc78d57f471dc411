"""Environment config fields that name a file or folder on the server (``server_path`` in their
JSON schema, e.g. ALFWorld's ``game_path`` and ``data_dir``): through the API they may only
point inside the operator's ``ADAPT_PATH_ROOTS``. The stored config holds the resolved path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
