"""The version of the installed adapt, with one source: ``version`` in ``pyproject.toml``, read
from the package's metadata (``adapt --version``, ``GET /version`` and the OpenAPI document's
``info.version`` all say this)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

#: what a source tree that was never installed says (no metadata to read)
UNKNOWN = "0+unknown"


def installed_version() -> str:
    """The version of the installed ``adapt`` distribution (``UNKNOWN`` when it is not
    installed, e.g. a checkout on ``PYTHONPATH``)."""
    try:
        return _distribution_version("adapt")
    except PackageNotFoundError:
        return UNKNOWN


__version__ = installed_version()
