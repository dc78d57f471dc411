"""The optional extra the mcp environment needs (the official ``mcp`` package)."""

from __future__ import annotations

from importlib.util import find_spec

from adapt.errors import ExtraMissing

INSTALL_HINT = 'pip install -e ".[mcp]" (the official mcp package, major version 2)'


MESSAGE = f"the mcp environment needs the optional extra 'mcp': {INSTALL_HINT}"


def require() -> None:
    """Raise :class:`~adapt.errors.ExtraMissing` unless the ``mcp`` package can be imported."""
    if find_spec("mcp") is None or find_spec("mcp.client") is None:
        raise ExtraMissing(MESSAGE)
