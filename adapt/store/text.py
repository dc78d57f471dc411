"""Text every database can store. PostgreSQL refuses NUL characters (in ``text`` and ``jsonb``)
and no UTF-8 column can hold a lone surrogate (``"\\ud800"`` is valid JSON). User input with
such characters is refused at the edge (:func:`find_unstorable` names the field); text the
server produces itself (model output, observations) is made storable with :func:`storable`.
"""

from __future__ import annotations

import re
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def storable(value: Any) -> Any:
    """``value`` with NUL characters and lone surrogates replaced by U+FFFD, recursively
    through dicts (keys too), lists and tuples; anything else is returned as it is."""
    if isinstance(value, str):
        return _UNSTORABLE.sub(REPLACEMENT, value) if _UNSTORABLE.search(value) else value
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(storable(v) for v in value)
    return value


def find_unstorable(value: Any, path: str) -> str | None:
    """The dotted path (from ``path``) of the first string in ``value`` that holds a NUL
    character or a lone surrogate, else None."""
    if isinstance(value, str):
        return path if _UNSTORABLE.search(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            found = find_unstorable(k, f"{path}.{k!s}") or find_unstorable(v, f"{path}.{k!s}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = find_unstorable(v, f"{path}.{i}")
            if found:
                return found
    return None


UNSTORABLE_MESSAGE = ("contains a NUL character or an unpaired UTF-16 surrogate, which cannot be "
                      "stored; remove it")
